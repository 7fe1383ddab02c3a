// packaging/installstats.service is a valid, hardened systemd unit that runs the real binary (the
// Debian package installs it too: test/e2e/debian-package-installs-upgrades-and-purges.test.ts).
import { expect, test, setDefaultTimeout } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary } from "../helpers/binary.ts";
import { ROOT, tempDir } from "../helpers/tmp.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

const unit = readFileSync(join(ROOT, "packaging/installstats.service"), "utf8");
const analyze = Bun.which("systemd-analyze");

test("the unit is hardened and stops gracefully", async () => {
  for (const line of [
    "NoNewPrivileges=yes",
    "ProtectSystem=strict",
    "ReadWritePaths=/var/lib/installstats",
    "PrivateTmp=yes",
    "CapabilityBoundingSet=",
    "KillSignal=SIGTERM",
    "User=installstats",
    "Restart=on-failure",
  ]) {
    expect(unit).toContain(line);
  }
  expect(unit).toMatch(/^ExecStart=\/usr\/local\/bin\/installstats serve$/m);
  // The database's default comes before the environment file, whose settings win over it.
  const dbDefault = unit.indexOf("\nEnvironment=INSTALLSTATS_DB=/var/lib/installstats/installstats.db\n");
  expect(dbDefault).toBeGreaterThan(0);
  expect(unit.indexOf("\nEnvironmentFile=-/etc/installstats/env\n")).toBeGreaterThan(dbDefault);
});

test.if(analyze !== null)("systemd-analyze verify accepts it (ExecStart pointed at the compiled binary)", async () => {
  const bin = await compiledBinary();
  const path = join(tempDir(), "installstats.service");
  writeFileSync(path, unit.replace("/usr/local/bin/installstats", bin));
  const run = Bun.spawnSync([analyze!, "verify", path]);
  expect(run.stderr.toString().trim()).toBe("");
  expect(run.exitCode).toBe(0);
});
