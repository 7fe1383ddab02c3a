// A throwaway PostgreSQL server on 127.0.0.1 for tests and benchmarks: Debian's binaries, a
// fresh data directory under /tmp owned by the `postgres` user (CI runs as root, and the server
// refuses to), trust authentication on loopback only, removed on stop. Optionally a streaming
// replica of it on another port (pg_basebackup -R), as ../shared/STACK-NOTES.md checked.
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import postgres from "postgres";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PgServer {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  dir: string;
  stop(): Promise<void>;
}

/** Where Debian puts the server binaries (the newest major version present). */
function pgBinDir(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], "bin") : null;
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** Runs a server binary as the postgres user when we are root (as CI is), else as ourselves. */
function asPostgres(cmd: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd;
}

function run(cmd: string[]): void {
  const r = Bun.spawnSync(asPostgres(cmd), { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd[0]} failed (${r.exitCode}): ${r.stderr.toString().trim() || r.stdout.toString().trim()}`);
}

function ownedDir(prefix: string): string {
  // The test run's directory (TMPDIR) is private to root: the postgres user may pass through it.
  if (process.getuid?.() === 0 && tmpdir() !== "/tmp") chmodSync(tmpdir(), 0o711);
  return ownDir(mkdtempSync(join(tmpdir(), prefix)));
}

/** `dir` (made if missing) owned by the postgres user when we are root. */
function ownDir(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const uid = Bun.spawnSync(["id", "-u", "postgres"]).stdout.toString().trim();
  const gid = Bun.spawnSync(["id", "-g", "postgres"]).stdout.toString().trim();
  if (process.getuid?.() === 0 && uid && gid) chownSync(dir, Number(uid), Number(gid));
  return dir;
}

/** Server settings (`-c name=value`) beyond the defaults: benchmarks size memory and checkpoints for their data. */
export type PgSettings = Record<string, string | number>;

function startDir(bin: string, data: string, port: number, settings: PgSettings = {}, keep = false): PgServer {
  const extra = Object.entries(settings).map(([k, v]) => ` -c ${k}=${v}`).join("");
  run([join(bin, "pg_ctl"), "-D", data, "-w", "-t", "60", "-l", join(data, "server.log"), "-o", `-p ${port} -k ${data} -c listen_addresses=127.0.0.1 -c fsync=on${extra}`, "start"]);
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir: data,
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        // Not running any more (crashed by a test): nothing to stop.
        if (Bun.spawnSync(asPostgres([join(bin, "pg_ctl"), "-D", data, "status"])).exitCode === 0) run([join(bin, "pg_ctl"), "-D", data, "-w", "-m", "fast", "stop"]);
      } finally {
        if (!keep) rmSync(data, { recursive: true, force: true });
      }
    },
  };
}

/**
 * A fresh server; throws when PostgreSQL is not installed (`.ci/run` installs it). With `keepIn`
 * (benchmarks: a seeded database reused run after run) the data directory is that one, made on
 * the first start, started again afterwards, and kept when the server stops.
 */
export async function startPostgres(settings: PgSettings = {}, keepIn?: string): Promise<PgServer> {
  const bin = pgBinDir();
  if (!bin) throw new Error("PostgreSQL is not installed (Debian: apt-get install -y postgresql)");
  if (keepIn !== undefined && existsSync(join(keepIn, "PG_VERSION"))) return startDir(bin, keepIn, await freePort(), settings, true);
  const data = keepIn ?? ownedDir("installstats-pg-");
  if (keepIn !== undefined) ownDir(keepIn);
  run([join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  // Replication from loopback, for startReplica.
  Bun.spawnSync(asPostgres(["sh", "-c", `echo 'host replication postgres 127.0.0.1/32 trust' >> ${join(data, "pg_hba.conf")}`]));
  return startDir(bin, data, await freePort(), settings, keepIn !== undefined);
}

/** A new, empty database `name` on `server`; its URL. */
export async function createDatabase(server: PgServer, name: string): Promise<string> {
  const admin = postgres(server.url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return server.url.replace(/\/postgres$/, `/${name}`);
}

/** Password authentication (scram-sha-256) for TCP connections from now on, instead of trust. */
export function requirePasswords(server: PgServer): void {
  const bin = pgBinDir()!;
  run(["sh", "-c", `sed -i 's/^host\\(.*\\)trust$/host\\1scram-sha-256/' ${join(server.dir, "pg_hba.conf")}`]);
  run([join(bin, "pg_ctl"), "-D", server.dir, "reload"]);
}

/** A streaming replica of `primary` on its own port (read-only; it follows within a second or so). */
export async function startReplica(primary: PgServer): Promise<PgServer> {
  const bin = pgBinDir()!;
  const data = ownedDir("installstats-pg-replica-");
  run([join(bin, "pg_basebackup"), "-D", data, "-R", "-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres"]);
  return startDir(bin, data, await freePort());
}

export interface Pooler {
  port: number;
  /** postgres://postgres@127.0.0.1:<port>/<database>, through the pooler. */
  url(database: string): string;
  /** What pgbouncer logged (its errors and the connections it made). */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Debian's pgbouncer on 127.0.0.1 in front of `server`: every database of the server, logged in
 * as postgres, `poolSize` server connections per database, in `poolMode`. Throws when pgbouncer is
 * not installed (`.ci/run` installs it).
 */
export async function startPgbouncer(server: PgServer, poolMode: "session" | "transaction", poolSize = 4): Promise<Pooler> {
  const bin = "/usr/sbin/pgbouncer";
  if (!existsSync(bin)) throw new Error("pgbouncer is not installed (Debian: apt-get install -y pgbouncer)");
  const dir = ownedDir("installstats-pgbouncer-");
  const port = await freePort();
  const config = join(dir, "pgbouncer.ini");
  const pidfile = join(dir, "pgbouncer.pid");
  const logfile = join(dir, "pgbouncer.log");
  const ini = [
    "[databases]",
    `* = host=127.0.0.1 port=${server.port} user=postgres`,
    "[pgbouncer]",
    "listen_addr = 127.0.0.1",
    `listen_port = ${port}`,
    `unix_socket_dir = ${dir}`,
    "auth_type = any",
    `pool_mode = ${poolMode}`,
    `default_pool_size = ${poolSize}`,
    "max_client_conn = 500",
    `logfile = ${logfile}`,
    `pidfile = ${pidfile}`,
  ].join("\n");
  run(["sh", "-c", `cat > ${config} <<'INI'\n${ini}\nINI`]);
  run([bin, "-d", config]);
  for (let i = 0; i < 100 && !existsSync(pidfile); i++) await Bun.sleep(20);
  let stopped = false;
  return {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    log: () => Bun.spawnSync(["cat", logfile]).stdout.toString(),
    async stop() {
      if (stopped) return;
      stopped = true;
      const pid = Number(Bun.spawnSync(["cat", pidfile]).stdout.toString().trim());
      if (pid > 0) {
        process.kill(pid, "SIGTERM");
        for (let i = 0; i < 100 && existsSync(pidfile); i++) await Bun.sleep(20);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs a server binary without blocking the event loop (requests in flight go on meanwhile). */
async function runAsync(cmd: string[]): Promise<void> {
  const p = Bun.spawn(asPostgres(cmd), { stdout: "pipe", stderr: "pipe" });
  if ((await p.exited) !== 0) throw new Error(`${cmd[0]} failed: ${await new Response(p.stderr).text()}`);
}

/** Stops a server as a crash would (immediate: no shutdown checkpoint, clients cut off); its directory stays until stop(). */
export function crash(server: PgServer): Promise<void> {
  return runAsync([join(pgBinDir()!, "pg_ctl"), "-D", server.dir, "-m", "immediate", "stop"]);
}

/** Promotes a streaming replica to a primary (pg_ctl promote), resolving once it accepts writes. */
export function promote(server: PgServer): Promise<void> {
  return runAsync([join(pgBinDir()!, "pg_ctl"), "-D", server.dir, "-w", "promote"]);
}
