// A throwaway PostgreSQL server on 127.0.0.1 for tests and benchmarks: Debian's binaries, a
// fresh data directory under /tmp owned by the `postgres` user (CI runs as root, and the server
// refuses to), trust authentication on loopback only, removed on stop. Optionally a streaming
// replica of it on another port (pg_basebackup -R).
import { afterAll, beforeAll } from "bun:test";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { freePort } from "./binary.ts";
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
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], "bin") : null;
}

/** Runs a server binary as the postgres user when we are root (as CI is), else as ourselves. */
function asPostgres(cmd: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd;
}

function run(cmd: string[]): void {
  const r = Bun.spawnSync(asPostgres(cmd), { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0)
    throw new Error(`${cmd[0]} failed (${r.exitCode}): ${r.stderr.toString().trim() || r.stdout.toString().trim()}`);
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
  const extra = Object.entries(settings)
    .map(([k, v]) => ` -c ${k}=${v}`)
    .join("");
  run([
    join(bin, "pg_ctl"),
    "-D",
    data,
    "-w",
    "-t",
    "60",
    "-l",
    join(data, "server.log"),
    "-o",
    `-p ${port} -k ${data} -c listen_addresses=127.0.0.1 -c fsync=on${extra}`,
    "start",
  ]);
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
        if (Bun.spawnSync(asPostgres([join(bin, "pg_ctl"), "-D", data, "status"])).exitCode === 0)
          run([join(bin, "pg_ctl"), "-D", data, "-w", "-m", "fast", "stop"]);
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
  if (keepIn !== undefined && existsSync(join(keepIn, "PG_VERSION")))
    return startDir(bin, keepIn, await freePort(), settings, true);
  const data = keepIn ?? ownedDir("installstats-pg-");
  if (keepIn !== undefined) ownDir(keepIn);
  run([join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  // Replication from loopback, for startReplica.
  Bun.spawnSync(
    asPostgres(["sh", "-c", `echo 'host replication postgres 127.0.0.1/32 trust' >> ${join(data, "pg_hba.conf")}`]),
  );
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
export async function startPgbouncer(
  server: PgServer,
  poolMode: "session" | "transaction",
  poolSize = 4,
): Promise<Pooler> {
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

/** A pg_auto_failover formation: a monitor and two PostgreSQL nodes, one primary, one synchronous standby. */
export interface AutoFailover {
  /** The URL `pg_autoctl show uri` prints, with the installstats role's name and password. */
  url: string;
  nodes: readonly { name: string; port: number }[];
  /** The node the monitor has as primary (reported and assigned; wait_primary once its standby is lost), or null during a switch. */
  primary(): string | null;
  /** Both nodes healthy again, one primary and one secondary. */
  settled(): boolean;
  /** A planned switchover (`pg_autoctl perform switchover`), resolving once it is done. */
  switchover(): Promise<void>;
  /** The node lost as a machine is: its keeper, PostgreSQL and every session killed at once (SIGKILL). */
  crash(name: string): void;
  stop(): Promise<void>;
}

/**
 * A pg_auto_failover formation on 127.0.0.1 set up as docs/postgresql.md#high-availability says, passwords
 * and TLS included: loopback stands in for other machines, so initdb's "trust from 127.0.0.1"
 * rules are removed and only the rules pg_autoctl writes, and the application's, apply. Throws
 * when Debian's pg-auto-failover-cli is not installed (`.ci/run` installs it).
 */
export async function startAutoFailover(): Promise<AutoFailover> {
  const bin = pgBinDir();
  if (!bin || !existsSync("/usr/bin/pg_autoctl"))
    throw new Error(
      "pg_auto_failover is not installed (Debian: apt-get install -y pg-auto-failover-cli postgresql-15-auto-failover)",
    );
  const root = ownedDir("installstats-paf-");
  // The servers' sockets go where Debian's libpq looks (psql below talks to them through it).
  ownDir("/var/run/postgresql");
  // Everything pg_autoctl writes (configuration, state, pid files) stays under root.
  const env = [
    "env",
    `HOME=${root}`,
    `XDG_CONFIG_HOME=${root}/config`,
    `XDG_DATA_HOME=${root}/data`,
    `XDG_RUNTIME_DIR=${root}/run`,
    `PATH=${bin}:/usr/bin:/bin`,
  ];
  ownDir(join(root, "run"));
  const autoctl = (...args: string[]) => run([...env, "pg_autoctl", ...args]);
  const output = (cmd: string[]) => {
    const r = Bun.spawnSync(asPostgres([...env, ...cmd]), { stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed: ${r.stderr.toString().trim()}`);
    return r.stdout.toString().trim();
  };
  const psql = (port: number, db: string, ...sql: string[]) =>
    output([
      "psql",
      "-X",
      "-q",
      "-h",
      "/var/run/postgresql",
      "-p",
      String(port),
      "-d",
      db,
      ...sql.flatMap((s) => ["-c", s]),
    ]);
  const untrust = (dir: string) =>
    run([
      "sed",
      "-i",
      "-E",
      String.raw`/^host\s+(all|replication)\s+all\s+(127\.0\.0\.1\/32|::1\/128)\s+trust/d`,
      join(dir, "pg_hba.conf"),
    ]);
  const MON = "mon-secret",
    REPL = "repl-secret",
    APP = "app-secret";
  run([
    "sh",
    "-c",
    `printf '*:*:*:pgautofailover_replicator:${REPL}\\n' > ${root}/.pgpass && chmod 600 ${root}/.pgpass`,
  ]);

  const keepers = new Map<string, ReturnType<typeof Bun.spawn>>();
  // Each keeper in a session of its own: its services, PostgreSQL and the sessions' processes can
  // then all be found (pg_autoctl's supervisor restarts a killed service, so a kill must reach all).
  const start = (name: string) =>
    keepers.set(
      name,
      Bun.spawn(["setsid", ...asPostgres([...env, "pg_autoctl", "run", "--pgdata", join(root, name)])], {
        stdout: "ignore",
        stderr: "ignore",
      }),
    );
  const state = () =>
    (
      JSON.parse(output(["pg_autoctl", "show", "state", "--pgdata", join(root, "monitor"), "--json"])) as {
        nodename: string;
        current_group_state: string;
        assigned_group_state: string;
      }[]
    ).map((n) => ({
      name: n.nodename,
      reported: n.current_group_state,
      assigned: n.assigned_group_state,
    }));
  const until = async (what: string, ok: () => boolean, ms = 90_000) => {
    for (const deadline = Date.now() + ms; ; await Bun.sleep(250)) {
      try {
        if (ok()) return;
      } catch {
        // the monitor or a node not answering yet
      }
      if (Date.now() > deadline)
        throw new Error(`pg_auto_failover: timed out waiting for ${what}: ${JSON.stringify(state())}`);
    }
  };

  const kill = (name: string, signal: "SIGKILL" | "SIGTERM") => {
    const keeper = keepers.get(name);
    // SIGTERM to the keeper alone: it stops its services and PostgreSQL. SIGKILL to its whole session.
    if (keeper)
      Bun.spawnSync(
        signal === "SIGTERM" ? ["kill", "-TERM", String(keeper.pid)] : ["pkill", "-KILL", "-s", String(keeper.pid)],
      );
  };
  /** Keepers asked to stop (they stop their PostgreSQL), then whatever is left killed; the files removed. */
  const teardown = async () => {
    for (const name of [...keepers.keys()].reverse()) kill(name, "SIGTERM");
    await Promise.race([Promise.all([...keepers.values()].map((k) => k.exited)), Bun.sleep(20_000)]);
    for (const name of keepers.keys()) kill(name, "SIGKILL");
    rmSync(root, { recursive: true, force: true });
  };
  const settled = () =>
    state()
      .map((x) => `${x.reported}/${x.assigned}`)
      .sort()
      .join(",") === "primary/primary,secondary/secondary";
  let nodes: { name: string; port: number }[] = [];
  let uri = "";
  try {
    const [monPort, ...ports] = [await freePort(), await freePort(), await freePort()];
    autoctl(
      "create",
      "monitor",
      "--pgdata",
      join(root, "monitor"),
      "--pgport",
      String(monPort),
      "--hostname",
      "127.0.0.1",
      "--listen",
      "127.0.0.1",
      "--auth",
      "scram-sha-256",
      "--ssl-self-signed",
    );
    untrust(join(root, "monitor"));
    start("monitor");
    await until(
      "the monitor",
      () => (psql(monPort!, "pg_auto_failover", `ALTER USER autoctl_node PASSWORD '${MON}'`), true),
    );
    const monitor = `postgres://autoctl_node:${MON}@127.0.0.1:${monPort}/pg_auto_failover?sslmode=require`;
    nodes = ports.map((port, i) => ({ name: `node${i + 1}`, port: port! }));
    for (const [i, n] of nodes.entries()) {
      const dir = join(root, n.name);
      autoctl(
        "create",
        "postgres",
        "--pgdata",
        dir,
        "--pgport",
        String(n.port),
        "--hostname",
        "127.0.0.1",
        "--listen",
        "127.0.0.1",
        "--name",
        n.name,
        "--dbname",
        "installstats",
        "--monitor",
        monitor,
        "--auth",
        "scram-sha-256",
        "--ssl-self-signed",
      );
      autoctl("config", "set", "--pgdata", dir, "replication.password", REPL);
      if (i === 0) {
        // The standby clones this node's pg_hba.conf with its data.
        untrust(dir);
        run([
          "sh",
          "-c",
          `echo 'hostssl installstats installstats 127.0.0.1/32 scram-sha-256' >> ${join(dir, "pg_hba.conf")}`,
        ]);
      }
      start(n.name);
      if (i === 0) {
        await until("the first node", () => state().some((s) => s.name === n.name && s.reported === "single"));
        // One transaction, tried until the server takes it (it restarts once more after registering).
        const roles = `BEGIN; ALTER USER pgautofailover_replicator PASSWORD '${REPL}'; CREATE ROLE installstats LOGIN PASSWORD '${APP}'; ALTER DATABASE installstats OWNER TO installstats; ALTER SCHEMA public OWNER TO installstats; COMMIT;`;
        await until("the first node's roles", () => (psql(n.port, "installstats", roles), true));
      }
    }
    await until("a primary and a secondary", settled);
    uri = output(["pg_autoctl", "show", "uri", "--pgdata", join(root, nodes[0]!.name), "--formation", "default"]);
  } catch (e) {
    await teardown();
    throw e;
  }

  let stopped = false;
  return {
    url: uri.replace("postgres://", `postgres://installstats:${APP}@`),
    nodes,
    // wait_primary: a primary whose standby is gone (writes go on, not synchronously replicated).
    primary: () =>
      state().find((s) => s.reported === s.assigned && (s.reported === "primary" || s.reported === "wait_primary"))
        ?.name ?? null,
    settled,
    async switchover() {
      run([
        ...env,
        "timeout",
        "120",
        "pg_autoctl",
        "perform",
        "switchover",
        "--pgdata",
        join(root, "monitor"),
        "--formation",
        "default",
      ]);
      await until("the switchover to settle", settled);
    },
    crash(name) {
      kill(name, "SIGKILL");
      keepers.delete(name);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await teardown();
    },
  };
}

/**
 * A throwaway server for the test file that calls this at its top level: started before its
 * tests, stopped (and removed, with every database on it) after them. `database()` makes a fresh
 * database on it and returns its URL.
 */
export function postgresForFile(): { database(): Promise<string> } {
  let server: PgServer | undefined;
  let n = 0;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(() => server?.stop());
  return { database: () => createDatabase(server!, `test_${++n}`) };
}

/** The PostgreSQL migrations before the one tagged `tag`, as a folder of their own (a database of an earlier schema). */
export function migrationsBefore(tag: string): string {
  const MIGRATIONS = new URL("../../drizzle/postgres/", import.meta.url).pathname;
  const journal = JSON.parse(readFileSync(join(MIGRATIONS, "meta/_journal.json"), "utf8")) as {
    entries: { tag: string }[];
  };
  const cut = journal.entries.findIndex((e) => e.tag === tag);
  if (cut < 1) throw new Error(`no migration ${tag} after the first`);
  const dir = mkdtempSync(join(tmpdir(), "pg-migrations-"));
  mkdirSync(join(dir, "meta"));
  const entries = journal.entries.slice(0, cut);
  writeFileSync(join(dir, "meta/_journal.json"), JSON.stringify({ ...journal, entries }));
  for (const e of entries) copyFileSync(join(MIGRATIONS, `${e.tag}.sql`), join(dir, `${e.tag}.sql`));
  return dir;
}
