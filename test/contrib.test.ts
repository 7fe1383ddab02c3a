// contrib/installstats.service is a valid, hardened systemd unit that runs the real binary.
import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, compiledBinary, tempDir } from "./helpers/binary.ts";

const unit = readFileSync(join(ROOT, "contrib/installstats.service"), "utf8");
const analyze = Bun.which("systemd-analyze");

test("the unit is hardened and stops gracefully", () => {
  for (const line of ["NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/lib/installstats", "PrivateTmp=yes", "CapabilityBoundingSet=", "KillSignal=SIGTERM", "User=installstats", "Restart=on-failure"]) {
    expect(unit).toContain(line);
  }
  expect(unit).toMatch(/^ExecStart=\/usr\/local\/bin\/installstats serve --db \/var\/lib\/installstats\/installstats\.db$/m);
});

test.if(analyze !== null)("systemd-analyze verify accepts it (ExecStart pointed at the compiled binary)", async () => {
  const bin = await compiledBinary();
  const path = join(tempDir(), "installstats.service");
  writeFileSync(path, unit.replace("/usr/local/bin/installstats", bin));
  const run = Bun.spawnSync([analyze!, "verify", path]);
  expect(run.stderr.toString().trim()).toBe("");
  expect(run.exitCode).toBe(0);
});
