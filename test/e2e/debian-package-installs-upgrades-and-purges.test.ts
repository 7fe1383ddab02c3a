// The Debian package (scripts/deb.ts) installed for real with apt-get: the service user, the data
// directory and the enabled unit; the unit checked by systemd-analyze; its ExecStart run as its
// user with its environment until healthy and a report stored; an upgrade keeping the data and
// the edited settings; remove keeping the data; purge removing data, user and settings.
// systemd is not PID 1 in a session or in CI, so the unit's command is run here as systemd would.
// Needs root (it installs a package); skipped otherwise, and when a package or user named
// installstats is already on the machine (not ours to touch).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary, freePort } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { buildDeb, hostDebArch } from "../../scripts/deb.ts";

setDefaultTimeout(300_000);

const sh = (cmd: string[], env: Record<string, string> = {}) => {
  const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe", env: { ...process.env, ...env } });
  return { code: r.exitCode, out: r.stdout.toString().trim(), err: r.stderr.toString().trim() };
};
const installedStatus = () => sh(["dpkg-query", "-W", "-f=${Status} ${Version}", "installstats"]).out;

const reason = (() => {
  if (process.getuid?.() !== 0) return "not root: installing a package needs root (CI runs as root)";
  for (const tool of ["dpkg-deb", "apt-get", "setpriv", "systemd-analyze", "deb-systemd-helper"])
    if (!Bun.which(tool)) return `${tool} is not installed`;
  if (!hostDebArch()) return `no Debian architecture for ${process.arch}`;
  if (installedStatus() !== "" || sh(["getent", "passwd", "installstats"]).code === 0)
    return "a package or user named installstats is already on this machine: not touching it";
  return null;
})();
if (reason) console.warn(`Debian package tests skipped: ${reason}`);

const pkgVersion = (
  JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
).version;
const UNIT = "/lib/systemd/system/installstats.service";
const DATA = "/var/lib/installstats";
const apt = (...args: string[]) =>
  sh(["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300", ...args], { DEBIAN_FRONTEND: "noninteractive" });

/** The unit's ExecStart, Environment=, EnvironmentFile=, WorkingDirectory= and User=. */
function unitOf(text: string) {
  const values = (key: string) => [...text.matchAll(new RegExp(`^${key}=(.*)$`, "gm"))].map((m) => m[1]!.trim());
  return {
    exec: values("ExecStart")[0]!.split(/\s+/),
    env: values("Environment"),
    envFile: values("EnvironmentFile")[0]!.replace(/^-/, ""),
    dir: values("WorkingDirectory")[0]!,
    user: values("User")[0]!,
  };
}

/** KEY=value lines of an environment file as systemd reads them (comments and blanks skipped). */
const envLines = (text: string) =>
  text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));

/** Runs the unit's command as systemd would (its user, directory and environment) until /healthz answers 200. */
async function runUnit(port: number) {
  const unit = unitOf(readFileSync(UNIT, "utf8"));
  const env = [...unit.env, ...envLines(readFileSync(unit.envFile, "utf8"))];
  // setpriv (util-linux) execs the command as the user, as systemd does: the SIGTERM below reaches the
  // server itself (runuser stays in between and exits 143 on it).
  const proc = Bun.spawn(
    [
      "setpriv",
      `--reuid=${unit.user}`,
      `--regid=${unit.user}`,
      "--init-groups",
      "--",
      "env",
      "-i",
      "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
      ...env,
      ...unit.exec,
    ],
    { cwd: unit.dir, stdout: "pipe", stderr: "pipe" },
  );
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return proc;
    if (proc.exitCode !== null) break;
    await Bun.sleep(100);
  }
  proc.kill();
  throw new Error(`the unit's command did not become healthy: ${await new Response(proc.stderr).text()}`);
}

describe.skipIf(reason !== null)("Debian package", () => {
  let dir = "";
  let lock: Bun.Subprocess<"pipe", "pipe", "ignore"> | undefined;
  const debs = { first: "", upgrade: "" };

  beforeAll(async () => {
    // One run at a time on this machine: the package is installed system-wide.
    lock = Bun.spawn(["flock", "-w", "600", "/run/lock/installstats-deb-test.lock", "sh", "-c", "echo locked; cat"], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "ignore",
    });
    const reader = lock.stdout.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("locked");
    reader.releaseLock();
    dir = tempDir("installstats-deb-");
    const binary = await compiledBinary();
    debs.first = buildDeb({ binary, version: pkgVersion, arch: hostDebArch()!, out: join(dir, "first") });
    debs.upgrade = buildDeb({
      binary,
      version: `${pkgVersion}+upgrade1`,
      arch: hostDebArch()!,
      out: join(dir, "upgrade"),
    });
  });

  afterAll(() => {
    if (installedStatus() !== "") sh(["dpkg", "--purge", "installstats"]);
    lock?.stdin.end();
  });

  const report = {
    payload_version: 2,
    random_id: `deb-${process.pid}`,
    execution_id: `deb-${process.pid}`,
    type: "lxc",
    nsapp: "jellyfin",
    status: "installing",
  };
  let port = 0;

  test("is named installstats_<version>_<arch>.deb and installs with apt-get: user, data directory, settings, enabled unit", () => {
    expect(debs.first).toEndWith(`/installstats_${pkgVersion}_${hostDebArch()}.deb`);
    const r = apt("install", debs.first);
    expect(r.err).not.toContain("E:");
    expect(r.code).toBe(0);
    expect(installedStatus()).toBe(`install ok installed ${pkgVersion}`);
    expect(sh(["/usr/bin/installstats", "--version"]).out).toStartWith(pkgVersion);

    const user = sh(["getent", "passwd", "installstats"]).out.split(":");
    expect(Number(user[2])).toBeLessThan(1000); // a system user
    expect(user[5]).toBe(DATA);
    expect(user[6]).toBe("/usr/sbin/nologin");
    const data = statSync(DATA);
    expect(data.uid).toBe(Number(user[2]));
    expect(data.mode & 0o777).toBe(0o750);
    const env = statSync("/etc/installstats/env");
    expect([env.uid, env.mode & 0o777]).toEqual([0, 0o600]);
    expect(readFileSync("/var/lib/dpkg/info/installstats.conffiles", "utf8").trim()).toBe("/etc/installstats/env");
    // Enabled: systemd starts it at boot (and postinst starts it now where systemd runs).
    expect(existsSync("/etc/systemd/system/multi-user.target.wants/installstats.service")).toBe(true);
  });

  test("its unit passes systemd-analyze verify and is rated well by systemd-analyze security", () => {
    const unit = readFileSync(UNIT, "utf8");
    for (const line of [
      "ExecStart=/usr/bin/installstats serve",
      "User=installstats",
      "StateDirectory=installstats",
      "ProtectSystem=strict",
      "NoNewPrivileges=yes",
      "PrivateTmp=yes",
      "ProtectHome=yes",
      "CapabilityBoundingSet=",
      "EnvironmentFile=-/etc/installstats/env",
    ]) {
      expect(unit).toContain(line);
    }
    expect(unit).toMatch(/^RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX$/m);
    const verify = sh(["systemd-analyze", "verify", UNIT]);
    expect(verify.err).toBe("");
    expect(verify.code).toBe(0);
    const security = sh(["systemd-analyze", "security", "--offline=true", UNIT]);
    const level = /Overall exposure level for installstats\.service: ([\d.]+) (\w+)/.exec(security.out);
    expect(level?.[2]).toBe("OK");
    expect(Number(level?.[1])).toBeLessThan(2); // 0 = fully locked down, 10 = exposed
  });

  test("the unit's ExecStart, run as its user with its environment file, serves and stores a report", async () => {
    port = await freePort();
    // As an admin would: settings in the conffile (kept by the upgrade below).
    writeFileSync(
      "/etc/installstats/env",
      `${readFileSync("/etc/installstats/env", "utf8")}INSTALLSTATS_HOST=127.0.0.1\nINSTALLSTATS_PORT=${port}\n`,
    );
    const server = await runUnit(port);
    const res = await fetch(`http://127.0.0.1:${port}/telemetry`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(report),
    });
    expect(res.status).toBe(201);
    server.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    expect(statSync(join(DATA, "installstats.db")).uid).toBe(Number(sh(["id", "-u", "installstats"]).out));
  });

  test("an upgrade keeps the data and the edited settings", async () => {
    const r = apt("install", debs.upgrade);
    expect(r.code).toBe(0);
    expect(installedStatus()).toBe(`install ok installed ${pkgVersion}+upgrade1`);
    expect(readFileSync("/etc/installstats/env", "utf8")).toContain(`INSTALLSTATS_PORT=${port}`);
    const server = await runUnit(port);
    const res = await fetch(`http://127.0.0.1:${port}/api/installs/${report.random_id}`);
    expect(res.status).toBe(200);
    server.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  });

  test("remove keeps the data, the user and the settings; purge removes them", () => {
    expect(apt("remove", "installstats").code).toBe(0);
    expect(existsSync("/usr/bin/installstats")).toBe(false);
    expect(existsSync(join(DATA, "installstats.db"))).toBe(true);
    expect(sh(["getent", "passwd", "installstats"]).code).toBe(0);
    expect(existsSync("/etc/installstats/env")).toBe(true);

    expect(apt("purge", "installstats").code).toBe(0);
    expect(installedStatus()).toBe("");
    expect(existsSync(DATA)).toBe(false);
    expect(sh(["getent", "passwd", "installstats"]).code).not.toBe(0);
    expect(sh(["getent", "group", "installstats"]).code).not.toBe(0);
    expect(existsSync("/etc/installstats")).toBe(false);
  });
});
