// Operations commands: backup, restore, export, import, prune, replay. Their core functions
// against real databases in temporary files, and the real CLI (exit codes, --help, output,
// progress silence when piped) through `bun src/main.ts`.
import { afterAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { Database } from "bun:sqlite";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate as drizzleMigrate } from "drizzle-orm/bun-sqlite/migrator";
import { loadConfig } from "../../src/config.ts";
import { backup } from "../../src/cli/backup.ts";
import { UsageError, type Command } from "../../src/cli/command.ts";
import { exportCommand } from "../../src/cli/export.ts";
import { importCommand } from "../../src/cli/import.ts";
import { prune } from "../../src/cli/prune.ts";
import { replay } from "../../src/cli/replay.ts";
import { restore } from "../../src/cli/restore.ts";
import { exportRoutes } from "../../src/read/native/export-routes.ts";
import { backupDatabase, checkDatabaseFile, databaseInUse, restoreDatabase } from "../../src/store/sqlite/backup.ts";
import { exportExecutions } from "../../src/transfer/export-executions.ts";
import { importRecords, splitRecords, type Piece } from "../../src/transfer/import-records.ts";
import { parseTimestamp } from "../../src/domain/time.ts";
import { pruneOlderThan } from "../../src/maintenance/prune.ts";
import { replayRejected } from "../../src/maintenance/replay.ts";
import { toRecord, type ExecutionRecord } from "../../src/read/record.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { APPLICATION_ID, migrationsFolder, openDatabase } from "../../src/store/sqlite/database.ts";
import { createSqliteStore } from "../../src/store/sqlite/store.ts";
import type { Store, WriteOp } from "../../src/store/contract/store.ts";
import type { Descriptive } from "../../src/domain/execution.ts";
import { ALL_APPS, sliceKey } from "../../src/domain/rollup.ts";
import { reportOp, uploadStart, uploadUpdate } from "../helpers/reports.ts";
import { BackupError, DatabaseOpenError } from "../../src/store/engine.ts";
import { startReport, testApp } from "../helpers/app.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

const ROOT = resolve(import.meta.dir, "../..");
const DIR = mkdtempSync(join(tmpdir(), "installstats-cli-ops-"));
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

let fileCounter = 0;
const tmp = (name: string) => join(DIR, `${++fileCounter}-${name}`);

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const normalize = { maxFieldLength: 128, maxErrorLength: 4096, maskIps: true };

/** The real CLI, in a process of its own, stdout and stderr piped. */
async function cli(args: string[], stdin?: string) {
  const p = Bun.spawn(["bun", "src/main.ts", ...args], {
    cwd: ROOT,
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(p.stdout).text(),
    new Response(p.stderr).text(),
    p.exited,
  ]);
  return { code, stdout, stderr };
}

/** A command run in this process, as main.ts would run it (errors are thrown, not turned into exit codes). */
async function run(
  command: Command,
  db: string,
  flags: Record<string, string | boolean> = {},
  positionals: string[] = [],
) {
  let out = "";
  let err = "";
  const all = { db, durability: "normal", ...flags };
  const code = await command.run({
    workers: {
      checkpointer: new URL("../../src/store/sqlite/checkpointer.ts", import.meta.url),
      scanner: new URL("../../src/store/sqlite/scanner.ts", import.meta.url),
    },
    config: loadConfig(all, {}),
    flags: all,
    positionals,
    version: "test",
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    progress: () => {},
    env: {},
    relaunch: () => {
      throw new Error("only serve on PostgreSQL runs itself again");
    },
  });
  return { code, out, err };
}

function fileStore(path: string): { sqlite: Database; store: Store; db: ReturnType<typeof openDatabase>["db"] } {
  const { sqlite, db } = openDatabase(path, { durability: "normal", migrate: true });
  return { sqlite, db, store: createSqliteStore(sqlite, db) };
}

// ---------------------------------------------------------------- data

const NO_RAW = new Uint8Array(0);

/** An /upload start report (a container on Debian 12 unless `fields` say otherwise), as ingestion writes it. */
const start = (id: string, at: number, fields: Partial<Descriptive> = {}, repairs: string[] = []): WriteOp => {
  const report = uploadStart(id);
  return {
    ...reportOp({ ...report, fields: { ...report.fields!, ...fields } }, at, "upload"),
    raw: repairs.length ? new TextEncoder().encode(`{"random_id":"${id}", broken`) : NO_RAW,
    repairs,
  };
};
const update = (id: string, at: number, status: string, error: string | null = null): WriteOp =>
  reportOp(uploadUpdate(id, status, error), at, "updatestatus");

const APPS = ["adguard", "jellyfin", "homeassistant", "docker", "jëllyfin-ünicode"];

/** Every kind of record there is: finished, failed, aborted, open, timed out, final-before-start, progress status, repaired. */
function diverseOps(n: number, t0: number, step: number, prefix = "r"): WriteOp[] {
  const ops: WriteOp[] = [];
  for (let i = 0; i < n; i++) {
    const id = `${prefix}-${i}`;
    const at = t0 + i * step;
    const vm = i % 5 === 1;
    const fields: Partial<Descriptive> = {
      nsapp: APPS[i % APPS.length]!,
      type: vm ? "vm" : i % 7 === 3 ? "turnkey" : "lxc",
      ctType: vm ? 2 : i % 2,
      diskSize: i % 9 === 0 ? 1.5 : 8 + (i % 4),
      disableip6: vm ? null : "yes",
      method: i % 6 === 0 ? null : "default",
      pveVersion: i % 10 === 0 ? "not found" : "8.2.2",
      osType: i % 3 === 0 ? "ubuntu" : "debian",
      osVersion: i % 3 === 0 ? "24.04" : "12",
    };
    switch (i % 8) {
      case 0:
        ops.push(start(id, at, fields), update(id, at + 95_500, "done"));
        break;
      case 1:
        ops.push(
          start(id, at, fields),
          update(
            id,
            at + 61_000 + i,
            "failed",
            `exit code 100\nE: "apt-get install" failed, <ipv4> unreachable ${i % 3}`,
          ),
        );
        break;
      case 2:
        ops.push(start(id, at, fields), update(id, at + 5_000, "failed", "INTERRUPTED"));
        break;
      case 3:
        ops.push(start(id, at, fields));
        break;
      case 4:
        ops.push(start(id, at, fields), { kind: "expire", executionId: id, at: at + 13 * HOUR });
        break;
      case 5:
        ops.push(update(id, at - 4_000, "failed", '=HYPERLINK("x") exit 1'), start(id, at, fields));
        break;
      case 6:
        ops.push(start(id, at, fields), update(id, at + 30_000, "configuring"));
        break;
      case 7:
        ops.push(start(id, at, fields, ["unescaped_quote"]), update(id, at + 120_000, "done"));
        break;
    }
  }
  return ops.sort((a, b) => a.at - b.at);
}

async function records(store: Pick<Store, "iterateExecutions">): Promise<Map<string, ExecutionRecord>> {
  const all = new Map<string, ExecutionRecord>();
  for await (const row of store.iterateExecutions({})) all.set(row.randomId, toRecord(row));
  return all;
}

const tables = ["executions", "held_reports", "rejected_reports", "bodies", "rollups", "error_signatures"];
function dump(path: string): Record<string, unknown[]> {
  const c = new Database(path, { readonly: true });
  try {
    return Object.fromEntries(tables.map((t) => [t, c.query(`SELECT * FROM ${t} ORDER BY 1`).all()]));
  } finally {
    c.close();
  }
}

/** A populated database file (written by this process; its connection is closed). */
function populated(name: string, n = 160, t0 = Date.parse("2026-03-01T00:00:00Z")): string {
  const path = tmp(name);
  const { store } = fileStore(path);
  store.write(diverseOps(n, t0, 37 * MIN));
  store.write([
    {
      kind: "reject",
      at: t0 + 1000,
      rejection: {
        endpoint: "upload",
        reason: "invalid_json",
        field: null,
        message: "not JSON",
        randomId: null,
        body: new TextEncoder().encode("{{{"),
      },
    },
  ]);
  store.close();
  return path;
}

// ---------------------------------------------------------------- backup

describe("backup", () => {
  test("a snapshot taken while another process keeps writing is consistent: integrity, rollups, a whole number of commits", async () => {
    const path = tmp("live.db");
    fileStore(path).store.close(); // created and migrated
    const writerScript = tmp("writer.ts");
    writeFileSync(
      writerScript,
      `import { openDatabase } from ${JSON.stringify(`${ROOT}/src/store/sqlite/database.ts`)};
import { createSqliteStore } from ${JSON.stringify(`${ROOT}/src/store/sqlite/store.ts`)};
import { reportOp, uploadStart, uploadUpdate } from ${JSON.stringify(`${ROOT}/test/helpers/reports.ts`)};
const { sqlite, db } = openDatabase(process.argv[2], { durability: "normal", migrate: false });
const store = createSqliteStore(sqlite, db);
const t0 = Date.parse("2026-01-01T00:00:00Z");
for (let i = 0; ; ) {
  const ops = [];
  for (let k = 0; k < 25; k++, i++) {
    const id = "w" + i, at = t0 + i * 97_000;
    ops.push(reportOp(uploadStart(id, { nsapp: "app" + (i % 13), disableip6: null, method: null }), at));
    const failed = i % 4 === 0;
    ops.push(reportOp(uploadUpdate(id, failed ? "failed" : "done", failed ? "exit code " + (i % 7) : null), at + 60_000));
  }
  store.write(ops);
}
`,
    );
    const writer = Bun.spawn(["bun", writerScript, path], { cwd: ROOT, stdout: "ignore", stderr: "pipe" });
    try {
      const watch = new Database(path, { readonly: true });
      const count = () => (watch.query("SELECT count(*) AS n FROM executions").get() as { n: number }).n;
      const deadline = Date.now() + 8000;
      while (count() < 3000 && Date.now() < deadline) await Bun.sleep(20);
      expect(count()).toBeGreaterThanOrEqual(3000);
      const counts: number[] = [];
      for (let b = 0; b < 3; b++) {
        const { sqlite } = openDatabase(path, { durability: "normal", migrate: false });
        const target = tmp(`live-backup-${b}.db`);
        const result = backupDatabase(sqlite, target);
        sqlite.close();
        expect(result.path).toBe(resolve(target));
        expect(result.bytes).toBe(statSync(target).size);
        const check = checkDatabaseFile(target);
        expect(check).toMatchObject({ ok: true, integrity: ["ok"] });
        expect(check.installs! % 25).toBe(0); // never half a transaction
        counts.push(check.installs!);
        const copy = openDatabase(target, { durability: "normal", migrate: false });
        expect(await verifyRollups(createSqliteStore(copy.sqlite, copy.db))).toMatchObject({
          ok: true,
          records: check.installs,
        });
        copy.sqlite.close();
      }
      expect(counts[2]!).toBeGreaterThan(counts[0]!); // the writer kept going meanwhile
      watch.close();
    } finally {
      writer.kill();
      await writer.exited;
    }
  }, 20_000);

  test("refuses to overwrite unless --force; the CLI prints path and size; exit codes", async () => {
    const path = populated("b.db", 40);
    const target = tmp("b-backup.db");
    const first = await cli(["backup", target, "--db", path]);
    expect(first.code).toBe(0);
    const printed = JSON.parse(first.stdout);
    expect(printed).toEqual({ backup: resolve(target), bytes: statSync(target).size, installs: 40, integrity: "ok" });
    expect(first.stderr).toBe(""); // nothing on stderr when piped

    const kept = tmp("not-a-backup.txt");
    writeFileSync(kept, "keep me");
    const foreign = tmp("foreign.db");
    new Database(foreign).run("CREATE TABLE t (x)");
    const [again, forced, ofForeign] = await Promise.all([
      cli(["backup", target, "--db", path]),
      cli(["backup", kept, "--force", "--db", path]),
      cli(["backup", tmp("f.db"), "--db", foreign]), // not ours to back up: exit 3
    ]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("already exists");
    expect(forced.code).toBe(0);
    expect(checkDatabaseFile(kept).ok).toBe(true);
    expect(ofForeign.code).toBe(3);

    for (const [db, positionals] of [
      [path, []],
      [tmp("missing.db"), [tmp("x.db")]],
      [path, [path]],
      [path, [join(DIR, "no-such-dir", "x.db")]],
      [path, [target]],
    ] as const) {
      await expect(run(backup, db, {}, [...positionals])).rejects.toThrow(UsageError);
    }
  });

  test("the core refuses an existing file with BackupError and leaves no temporary files", async () => {
    const path = populated("c.db", 8);
    const target = tmp("c-backup.db");
    writeFileSync(target, "x");
    const { sqlite } = openDatabase(path, { durability: "normal", migrate: false });
    expect(() => backupDatabase(sqlite, target)).toThrow(BackupError);
    sqlite.close();
    expect(readFileSync(target, "utf8")).toBe("x");
    expect([...new Bun.Glob("*.tmp").scanSync({ cwd: DIR, dot: true })]).toEqual([]);
  });
});

// ---------------------------------------------------------------- restore

describe("restore", () => {
  test("round trip: every table and every record field by field; an existing database only with --force", async () => {
    const path = populated("r.db");
    const before = dump(path);
    const backupFile = tmp("r-backup.db");
    const { sqlite } = openDatabase(path, { durability: "normal", migrate: false });
    backupDatabase(sqlite, backupFile);
    sqlite.close();

    // Into a new file.
    const fresh = tmp("r-restored.db");
    const r = await cli(["restore", backupFile, "--db", fresh]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ restored: resolve(fresh), installs: 160, migrations_applied: 0 });
    expect(dump(fresh)).toEqual(before);
    const a = fileStore(path);
    const b = fileStore(fresh);
    expect(await records(b.store)).toEqual(await records(a.store));
    expect((await verifyRollups(b.store)).ok).toBe(true);
    a.sqlite.close();

    // Over an existing database (no connection left open to it: openDatabase without migrations leaves none).
    const other = tmp("r-other.db");
    openDatabase(other, { durability: "normal", migrate: false }).sqlite.close();
    writeFileSync(`${other}-wal`, "stale wal of the old database");
    await expect(run(restore, other, {}, [backupFile])).rejects.toThrow(/--force/);
    expect((await run(restore, other, { force: true }, [backupFile])).code).toBe(0);
    expect(existsSync(`${other}-wal`) && readFileSync(`${other}-wal`, "utf8").includes("stale")).toBe(false);
    expect(dump(other)).toEqual(before);
    const o = fileStore(other);
    expect((await verifyRollups(o.store)).ok).toBe(true);
    o.sqlite.close();
  });

  test("an older backup is migrated to the current schema", async () => {
    // A database at the first two migrations only (before the replay columns).
    const folder = tmp("old-migrations");
    cpSync(migrationsFolder(), folder, { recursive: true });
    const journalPath = join(folder, "meta", "_journal.json");
    const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: unknown[] };
    const total = journal.entries.length;
    journal.entries = journal.entries.slice(0, 2);
    writeFileSync(journalPath, JSON.stringify(journal));
    const old = tmp("old.db");
    const c = new Database(old);
    c.run(`PRAGMA application_id = ${APPLICATION_ID}`);
    drizzleMigrate(drizzle(c), { migrationsFolder: folder });
    c.close();
    expect(checkDatabaseFile(old)).toMatchObject({ ok: true, migrations: 2 });

    const target = tmp("migrated.db");
    const result = restoreDatabase(old, target, { durability: "normal" });
    expect(result).toMatchObject({ installs: 0, migrationsApplied: total - 2, warnings: [] });
    const columns = (
      new Database(target, { readonly: true }).query("PRAGMA table_info(rejected_reports)").all() as { name: string }[]
    ).map((r) => r.name);
    expect(columns).toContain("replay_result");
  });

  test("refuses a foreign, a corrupt and a non-SQLite backup (exit 3), and never replaces a foreign database", async () => {
    const target = tmp("target.db");
    openDatabase(target, { durability: "normal", migrate: false }).sqlite.close();
    const original = readFileSync(target);

    const foreign = tmp("foreign.db");
    new Database(foreign).run("CREATE TABLE t (x)");
    const junk = tmp("junk.db");
    writeFileSync(junk, "this is not a database ".repeat(100));
    // A real backup with a page in the middle overwritten.
    const corrupt = tmp("corrupt.db");
    const { sqlite } = openDatabase(populated("to-corrupt.db", 400), { durability: "normal", migrate: false });
    backupDatabase(sqlite, corrupt);
    sqlite.close();
    const bytes = readFileSync(corrupt);
    bytes.fill(0x55, 4096 * 3, 4096 * 5);
    writeFileSync(corrupt, bytes);

    const viaCli = await cli(["restore", foreign, "--db", target, "--force"]);
    expect(viaCli.code).toBe(3);
    expect(viaCli.stderr).toContain("is not an installstats database");
    for (const [file, message] of [
      [junk, /not a usable|not a database/],
      [corrupt, /integrity|malformed/],
    ] as const) {
      expect(() => restoreDatabase(file, target, { force: true, durability: "normal" })).toThrow(message);
      expect(() => restoreDatabase(file, target, { force: true, durability: "normal" })).toThrow(DatabaseOpenError);
    }
    expect(readFileSync(target)).toEqual(original);
    await expect(run(restore, target, { force: true }, [tmp("missing.db")])).rejects.toThrow(UsageError);
    await expect(run(restore, target, {}, [])).rejects.toThrow(UsageError);

    // A good backup never replaces someone else's database.
    const good = tmp("good.db");
    const g = openDatabase(populated("good-src.db", 8), { durability: "normal", migrate: false });
    backupDatabase(g.sqlite, good);
    g.sqlite.close();
    expect(() => restoreDatabase(good, foreign, { force: true, durability: "normal" })).toThrow(DatabaseOpenError);
    expect(() => restoreDatabase(good, junk, { force: true, durability: "normal" })).toThrow(DatabaseOpenError);
  });

  test("refuses a database in use: a running server, or an open connection in this process", async () => {
    const path = tmp("served.db");
    const backupFile = tmp("served-backup.db");
    const src = openDatabase(populated("served-src.db", 24), { durability: "normal", migrate: false });
    backupDatabase(src.sqlite, backupFile);
    src.sqlite.close();

    const server = Bun.spawn(
      ["bun", "src/main.ts", "serve", "--db", path, "--port", "0", "--host", "127.0.0.1", "--log-level", "error"],
      { cwd: ROOT, stdout: "pipe", stderr: "pipe" },
    );
    try {
      const reader = server.stdout.getReader();
      const { value } = await reader.read();
      expect(new TextDecoder().decode(value)).toContain("listening");
      expect(databaseInUse(path)).toEqual({ inUse: true, unchecked: null });
      const r = await cli(["restore", backupFile, "--db", path, "--force"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("in use");
      expect(checkDatabaseFile(path).installs).toBe(0); // untouched
    } finally {
      server.kill("SIGTERM");
      await server.exited;
    }
    expect(databaseInUse(path)).toEqual({ inUse: false, unchecked: null });
    expect(restoreDatabase(backupFile, path, { force: true, durability: "normal" }).installs).toBe(24);

    // In this process: a connection that has read holds the database; an idle one does not.
    const local = tmp("local.db");
    openDatabase(local, { durability: "normal", migrate: false }).sqlite.close();
    const held = new Database(local);
    expect(databaseInUse(local)).toEqual({ inUse: false, unchecked: null });
    held.query("SELECT count(*) FROM sqlite_master").get();
    expect(databaseInUse(local)).toEqual({ inUse: true, unchecked: null });
    expect(() => restoreDatabase(backupFile, local, { force: true, durability: "normal" })).toThrow(/in use/);
    held.close();
    expect(databaseInUse(local)).toEqual({ inUse: false, unchecked: null });
    expect(restoreDatabase(backupFile, local, { force: true, durability: "normal" }).installs).toBe(24);
  }, 15_000);
});

// ---------------------------------------------------------------- export

describe("export", () => {
  const path = populated("export.db", 200, Date.now() - 20 * DAY);

  /** GET /api/export (its route plugin) over the same database file. */
  async function httpExport(qs: string): Promise<string> {
    const { sqlite, db } = openDatabase(path, { durability: "normal", migrate: true });
    const res = await exportRoutes({ store: createSqliteStore(sqlite, db), clock: Date.now }).handle(
      new Request(`http://localhost/api/export?${qs}`),
    );
    expect(res.status).toBe(200);
    const text = await res.text();
    sqlite.close();
    return text;
  }

  test("the CLI writes exactly what GET /api/export sends, for the same filters", async () => {
    // Well inside the data (20 to ~15 days ago) whatever the time of day: `from` is a date.
    const from = new Date(Date.now() - 18 * DAY).toISOString().slice(0, 10);
    const cases: [string, string[]][] = [
      ["", []],
      ["format=ndjson", ["--format", "ndjson"]],
      [
        "format=ndjson&nsapp=jellyfin&outcome=failed",
        ["--format", "ndjson", "--nsapp", "jellyfin", "--outcome", "failed"],
      ],
      [
        `from=${from}&type=vm&os_type=debian&os_version=12`,
        ["--from", from, "--type", "vm", "--os-type", "debian", "--os-version", "12"],
      ],
      [
        "days=30&q=apt&pve_version=8.2.2&method=default",
        ["--days", "30", "--q", "apt", "--pve-version", "8.2.2", "--method", "default"],
      ],
      ["status=configuring&format=ndjson", ["--status", "configuring", "--format", "ndjson"]],
    ];
    // Two through the real CLI (stdout), all through the command in this process (--out).
    const viaCli = await Promise.all(cases.slice(0, 3).map(([, flags]) => cli(["export", "--db", path, ...flags])));
    for (const [i, r] of viaCli.entries()) {
      expect(r.code).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout).toBe(await httpExport(cases[i]![0]));
    }
    for (const [qs, flags] of cases) {
      const out = tmp("case.export");
      const options = Object.fromEntries(
        Array.from({ length: flags.length / 2 }, (_, i) => [flags[2 * i]!.slice(2), flags[2 * i + 1]!]),
      );
      const r = await run(exportCommand, path, { ...options, out });
      expect(r.code).toBe(0);
      const text = readFileSync(out, "utf8");
      expect([qs, text]).toEqual([qs, await httpExport(qs)]);
      expect(text.trim().split("\n").length).toBeGreaterThan(3);
    }
  });

  test("--out writes the file (no progress when piped); bad filters are usage errors", async () => {
    const out = tmp("export.ndjson");
    const r = await cli(["export", "--db", path, "--format", "ndjson", "--out", out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`installstats export: 200 records written to ${out}\n`); // one line, no \r progress
    expect(readFileSync(out, "utf8")).toBe(await httpExport("format=ndjson"));
    const [badFormat, unknownFlag] = await Promise.all([
      cli(["export", "--db", path, "--format", "xml"]),
      cli(["export", "--db", path, "--bogus", "1"]),
    ]);
    expect([badFormat.code, unknownFlag.code]).toEqual([2, 2]);
    const bad: Record<string, string>[] = [
      { outcome: "fine" },
      { from: "yesterday" },
      { days: "0" },
      { days: "7", from: "2026-01-01" },
      { nsapp: "" },
      { q: "x".repeat(201) },
    ];
    for (const flags of bad) await expect(run(exportCommand, path, flags)).rejects.toThrow(UsageError);
    await expect(run(exportCommand, path, {}, ["positional"])).rejects.toThrow(UsageError);
    await expect(run(exportCommand, tmp("none.db"))).rejects.toThrow(UsageError);
  });
});

// ---------------------------------------------------------------- import

async function* chunked(text: string, sizes: number[]): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  for (let i = 0, k = 0; i < bytes.length; k++) {
    const n = sizes[k % sizes.length]!;
    yield bytes.subarray(i, i + n);
    i += n;
  }
}

describe("import", () => {
  test("our NDJSON export into a fresh database reproduces every record field by field (repaired aside); rollups exact; again = all duplicates", async () => {
    const source = fileStore(populated("import-src.db", 240));
    let ndjson = "";
    await exportExecutions(source.store, {}, "ndjson", (chunk) => void (ndjson += new TextDecoder().decode(chunk)));
    const expected = await records(source.store);
    expect(expected.size).toBe(240);

    const target = fileStore(tmp("import-dst.db"));
    const deps = { reads: target.store, commit: (ops: readonly WriteOp[]) => target.store.write(ops) };
    const invalid: string[] = [];
    // Odd chunk sizes: records and multi-byte characters split across chunks.
    const summary = await importRecords(deps, chunked(ndjson, [1, 7, 4096, 13, 100_000]), {
      normalize,
      batchOps: 100,
      onInvalid: (p, m) => invalid.push(`${p}: ${m}`),
    });
    expect(invalid).toEqual([]);
    expect(summary).toEqual({ format: "ndjson", read: 240, imported: 240, duplicates: 0, invalid: 0 });
    const got = await records(target.store);
    for (const [id, want] of expected) {
      // `repaired` is not carried over (see import-records.ts); every other field is.
      expect([id, got.get(id)]).toEqual([id, { ...want, repaired: false }]);
    }
    expect([...expected.values()].filter((r) => r.repaired).length).toBe(30);
    expect(await verifyRollups(target.store)).toMatchObject({ ok: true, records: 240 });
    // The aggregates agree too (rollups answer both).
    const summaryOf = async (s: Store) =>
      (
        await s.readRollups({
          grain: 1,
          slice: sliceKey("install", null, ALL_APPS),
          from: 0,
          to: Date.now() + DAY,
          parts: ["data"],
        })
      ).map((c) => ({ bucket: c.bucket, data: c.data }));
    expect(await summaryOf(target.store)).toEqual(await summaryOf(source.store));

    const again = await importRecords(deps, chunked(ndjson, [65536]), { normalize });
    expect(again).toEqual({ format: "ndjson", read: 240, imported: 0, duplicates: 240, invalid: 0 });
    expect((await verifyRollups(target.store)).ok).toBe(true);
  });

  test("the original API's /data/json array: imported, duration unknown, idempotent", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("o1", { nsapp: "jellyfin" }));
    t.clock.advance(1250);
    await t.post("/upload", startReport("o2", { nsapp: "docker", type: "vm", ct_type: 2, disableip6: "" }));
    await t.post("/upload/updatestatus", { status: "done", error: "none", random_id: "o1" });
    t.clock.advance(HOUR);
    await t.post("/upload", startReport("o3", { nsapp: "adguard" }));
    await t.post("/upload/updatestatus", { status: "failed", error: 'exit code 100: "apt" [x] {y}', random_id: "o3" });
    const res = await t.app.handle(new Request("http://localhost/data/json"));
    const array = await res.text();
    expect(array.startsWith("[{")).toBe(true);
    const source = await records(t.store);

    const target = fileStore(tmp("compat-dst.db"));
    const deps = { reads: target.store, commit: (ops: readonly WriteOp[]) => target.store.write(ops) };
    const summary = await importRecords(deps, chunked(array, [3, 1, 17]), { normalize });
    expect(summary).toEqual({ format: "json-array", read: 3, imported: 3, duplicates: 0, invalid: 0 });
    const got = await records(target.store);
    for (const [id, want] of source) {
      // The original keeps no updated_at: duration unknown, updated_at = created_at, and a final
      // status seen then. Its Go records cannot say "absent": "" (o2's disableip6) comes back as null.
      const absent = Object.fromEntries(
        Object.entries(want).map(([k, v]) => [k, v === "" ? null : v]),
      ) as ExecutionRecord;
      const finished = want.timeline.finished === null ? null : want.created_at;
      expect(got.get(id)).toEqual({
        ...absent,
        updated_at: want.created_at,
        duration_s: null,
        timeline: { ...want.timeline, finished },
      });
    }
    expect(source.get("o2")!.disableip6).toBe("");
    expect((await verifyRollups(target.store)).ok).toBe(true);
    expect(await importRecords(deps, chunked(array, [1 << 16]), { normalize })).toEqual({
      format: "json-array",
      read: 3,
      imported: 0,
      duplicates: 3,
      invalid: 0,
    });
  });

  test("a hand-written original array: Go times with nanoseconds and zones, zero values, invalid records counted not fatal", async () => {
    const original = `\ufeff [
      {"id":"65f1a2b3c4d5e6f708192a3b","ct_type":1,"disk_size":4,"core_count":1,"ram_size":512,"os_type":"debian","os_version":"12","disableip6":"yes","nsapp":"pihole","method":"default","created_at":"2024-11-20T14:32:10.123456789+01:00","pve_version":"8.1.4","status":"done","random_id":"g1","type":"lxc","error":""},
      {"id":"x","ct_type":0,"disk_size":0,"core_count":0,"ram_size":0,"os_type":"","os_version":"","disableip6":"","nsapp":"","method":"","created_at":"2024-11-20T13:00:00Z","pve_version":"","status":"installing","random_id":"g2","type":"vm","error":""},
      {"id":"y","created_at":"2024-11-20T13:00:00Z","status":"failed","random_id":"g3","type":"","error":"x"},
      {"id":"z","created_at":"not a time","status":"done","random_id":"g4","type":"lxc"},
      "a string",
      {"id":"w","ct_type":1,"created_at":"2024-11-21T00:00:00.5Z","status":"failed","random_id":"g5","type":"LXC","error":"exit code 1 at 10.0.0.7"}
    ]\n`;
    const target = fileStore(tmp("hand.db"));
    const invalid: string[] = [];
    const summary = await importRecords(
      { reads: target.store, commit: (ops: readonly WriteOp[]) => target.store.write(ops) },
      chunked(original, [5]),
      {
        normalize,
        onInvalid: (p, m) => invalid.push(`${p}: ${m}`),
      },
    );
    expect(summary).toEqual({ format: "json-array", read: 6, imported: 3, duplicates: 0, invalid: 3 });
    expect(invalid).toEqual([
      "element 3: type is required (one of lxc, vm, turnkey, pve, addon, tool)",
      'element 4: created_at must be an RFC 3339 time, got "not a time"',
      "element 5: not a JSON object",
    ]);
    const got = await records(target.store);
    expect(got.get("g1")).toMatchObject({
      created_at: "2024-11-20T13:32:10.123Z",
      status: "done",
      outcome: "success",
      error: null,
      duration_s: null,
      disk_size: 4,
    });
    expect(got.get("g2")).toMatchObject({
      type: "vm",
      ct_type: 0,
      disk_size: 0,
      os_type: null,
      nsapp: null,
      status: "installing",
      outcome: "in_progress",
    });
    expect(got.get("g5")).toMatchObject({
      type: "lxc",
      created_at: "2024-11-21T00:00:00.500Z",
      outcome: "failed",
      error: "exit code 1 at <ipv4>",
    });
    expect((await verifyRollups(target.store)).ok).toBe(true);
  });

  test("the splitters: elements and lines across any chunk boundary; truncation and garbage", async () => {
    const collect = async (text: string, sizes: number[]) => {
      const out: Piece[] = [];
      for await (const p of splitRecords(chunked(text, sizes))) out.push(p);
      return out;
    };
    const tricky = `[{"a":"] } , [ {","b":{"c":[1,2,{"d":"\\\\"}]}}, {"e":"\\"}]"} ,7, "s" ,null]`;
    const whole = await collect(tricky, [1 << 20]);
    expect(whole.map((p) => ("text" in p ? JSON.parse(p.text) : p))).toEqual([
      { a: "] } , [ {", b: { c: [1, 2, { d: "\\" }] } },
      { e: '"}]' },
      7,
      "s",
      null,
    ]);
    for (const sizes of [[1], [2, 3], [7]]) expect(await collect(tricky, sizes)).toEqual(whole);
    expect(await collect('{"a":1}\r\n\n{"b":"ü"}\n{"c"', [1])).toEqual([
      { position: "line 1", text: '{"a":1}' },
      { position: "line 3", text: '{"b":"ü"}' },
      { position: "line 4", text: '{"c"' },
    ]);
    expect(await collect('[{"a":1},{"b":', [4])).toEqual([
      { position: "element 1", text: '{"a":1}' },
      { position: "element 2", error: "the input ends inside this element (truncated file?)" },
    ]);
    expect(await collect("  \n", [1])).toEqual([]);
    await expect(collect("hello", [3])).rejects.toThrow(/neither NDJSON/);
    await expect(collect('[{"a":1} {"b":2}]', [3])).rejects.toThrow(/expected "," or "\]"/);
    await expect(collect('[{"a":1}] x', [3])).rejects.toThrow(/after the end/);
  });

  test("parseTimestamp reads ISO and Go times", async () => {
    expect(parseTimestamp("2026-06-01T12:00:00.000Z")).toBe(Date.parse("2026-06-01T12:00:00Z"));
    expect(parseTimestamp("2026-06-01T12:00:00.5Z")).toBe(Date.parse("2026-06-01T12:00:00.500Z"));
    expect(parseTimestamp("2026-06-01T12:00:00.123456789-05:30")).toBe(Date.parse("2026-06-01T17:30:00.123Z"));
    expect(parseTimestamp("2026-06-01T12:00:00+0200")).toBe(Date.parse("2026-06-01T10:00:00Z"));
    for (const bad of ["2026-02-30T00:00:00Z", "0001-01-01T00:00:00Z", "2026-06-01", "2026-06-01T12:00:00", 5, null])
      expect(parseTimestamp(bad)).toBeNull();
  });

  test("the CLI: stdin with -, a file, a summary on stdout, invalid records on stderr, no progress when piped", async () => {
    const db = tmp("cli-import.db");
    const lines = [
      JSON.stringify({
        random_id: "c1",
        type: "lxc",
        nsapp: "a",
        status: "done",
        outcome: "success",
        error: null,
        created_at: "2026-01-01T00:00:00.000Z",
        updated_at: "2026-01-01T00:01:00.000Z",
        duration_s: 60,
      }),
      "{not json",
      JSON.stringify({
        random_id: "c2",
        type: "lxc",
        nsapp: "a",
        status: "installing",
        created_at: "2026-01-01T00:00:01.000Z",
      }),
    ].join("\n");
    const r = await cli(["import", "-", "--db", db], lines);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ format: "ndjson", read: 3, imported: 2, duplicates: 0, invalid: 1 });
    expect(r.stderr).toStartWith("installstats import: line 2: not valid JSON");
    expect(r.stderr).not.toContain("\r");
    const file = tmp("cli-import.ndjson");
    writeFileSync(file, lines);
    const again = await run(importCommand, db, {}, [file]);
    expect(JSON.parse(again.out)).toMatchObject({ imported: 0, duplicates: 2, invalid: 1 });
    expect(again.err).toStartWith("installstats import: line 2: not valid JSON");
    const s = fileStore(db);
    expect((await records(s.store)).get("c1")).toMatchObject({
      duration_s: 60,
      updated_at: "2026-01-01T00:01:00.000Z",
      outcome: "success",
    });
    s.sqlite.close();
    await expect(run(importCommand, db, {}, [tmp("missing.ndjson")])).rejects.toThrow(UsageError);
    await expect(run(importCommand, db, {}, [])).rejects.toThrow(UsageError);
    const garbage = await cli(["import", "-", "--db", db], "hello");
    expect(garbage.code).toBe(2);
    expect(garbage.stderr).toContain("the input is none of the formats import reads");
  });
});

// ---------------------------------------------------------------- prune

describe("prune", () => {
  test("removes exactly the installs, held updates and rejected entries older than the cutoff; dry run changes nothing", async () => {
    const t = await testApp();
    const now = t.clock();
    const store = t.store;
    // 2 years of records, one every 3 days, plus a held update and rejected entries at both ends.
    const ops = diverseOps(244, now - 730 * DAY, 3 * DAY, "p");
    const reject = (at: number, id: string | null): WriteOp => ({
      kind: "reject",
      at,
      rejection: {
        endpoint: "upload",
        reason: "invalid_field",
        field: "type",
        message: "m",
        randomId: id,
        body: new Uint8Array([123]),
      },
    });
    ops.push(update("held-old", now - 500 * DAY, "done"), update("held-new", now - DAY, "done"));
    ops.push(
      reject(now - 600 * DAY, null),
      reject(now - 401 * DAY, "x"),
      reject(now - 399 * DAY, null),
      reject(now - HOUR, null),
    );
    store.write(ops);
    const cutoff = now - 400 * DAY;
    const all = await records(store);
    const old = [...all.values()].filter((r) => Date.parse(r.created_at) < cutoff).map((r) => r.random_id);
    expect(old.length).toBeGreaterThan(50);
    expect(old.length).toBeLessThan(all.size - 50);
    const totalBefore = (await t.get("/api/stats/summary?days=3660")).body.total as number;
    expect(totalBefore).toBe(all.size);

    const deps = { store, commit: (ops: readonly WriteOp[]) => store.write(ops) };
    const rejectedBefore = await t.rejected();
    const rejectedOld = rejectedBefore.filter((e) => e.receivedAt < cutoff).length;
    expect(rejectedOld).toBeGreaterThan(2); // two above, and the repaired bodies of old records
    const dry = await pruneOlderThan(deps, { cutoff, now, dryRun: true });
    expect(dry).toEqual({
      cutoff: new Date(cutoff).toISOString(),
      dry_run: true,
      executions: old.length,
      held: 1,
      rejected: rejectedOld,
    });
    expect(await records(store)).toEqual(all);
    expect(await t.rejected()).toEqual(rejectedBefore);

    const real = await pruneOlderThan(deps, { cutoff, now, batchSize: 25 });
    expect(real).toEqual({ ...dry, dry_run: false });
    const left = await records(store);
    expect(new Set(left.keys())).toEqual(new Set([...all.keys()].filter((id) => !old.includes(id))));
    for (const [id, r] of left) expect(r).toEqual(all.get(id)!);
    expect((await t.rejected()).every((e) => e.receivedAt >= cutoff)).toBe(true);
    expect((await t.rejected()).length).toBe(rejectedBefore.length - rejectedOld);
    expect(t.sqlite.query("SELECT random_id FROM held_reports").all()).toEqual([{ random_id: "held-new" }]);
    expect(await verifyRollups(store)).toMatchObject({ ok: true, records: all.size - old.length });
    expect((await t.get("/api/stats/summary?days=3660")).body.total).toBe(all.size - old.length);
    expect(await pruneOlderThan(deps, { cutoff, now })).toMatchObject({ executions: 0, held: 0, rejected: 0 });
  });

  test("the CLI: --older-than required and checked, --dry-run, counts printed", async () => {
    const path = populated("prune-cli.db", 30, Date.now() - 30 * DAY);
    const [missing, dry] = await Promise.all([
      cli(["prune", "--db", path]),
      cli(["prune", "--older-than", "15d", "--dry-run", "--db", path]),
    ]);
    expect(missing.code).toBe(2);
    for (const bad of ["soon", "0", "-5d", "12x"])
      await expect(run(prune, path, { "older-than": bad })).rejects.toThrow(UsageError);
    expect(dry.code).toBe(0);
    const counted = JSON.parse(dry.stdout);
    expect(counted.executions).toBeGreaterThan(5);
    expect(checkDatabaseFile(path).installs).toBe(30);
    const real = await cli(["prune", "--older-than", "15d", "--db", path]);
    expect(real.code).toBe(0);
    expect(real.stderr).toBe("");
    expect(JSON.parse(real.stdout)).toMatchObject({ executions: counted.executions, dry_run: false });
    expect(checkDatabaseFile(path).installs).toBe(30 - counted.executions);
    const s = fileStore(path);
    expect((await verifyRollups(s.store)).ok).toBe(true);
    s.sqlite.close();
  });
});

// ---------------------------------------------------------------- replay

describe("replay", () => {
  test("bodies that pass now become records at their received_at; every entry tried is marked; dry run changes nothing", async () => {
    const t = await testApp();
    const t0 = t.clock() - 2 * DAY;
    const body = (o: unknown) => new TextEncoder().encode(typeof o === "string" ? o : JSON.stringify(o));
    const reject = (
      at: number,
      endpoint: "upload" | "updatestatus",
      reason: "invalid_json" | "invalid_field" | "repaired" | "already_final",
      b: Uint8Array,
    ): WriteOp => ({
      kind: "reject",
      at,
      rejection: { endpoint, reason, field: null, message: "then", randomId: null, body: b },
    });
    t.store.write([
      // Logged as invalid JSON by an older parser; valid now.
      reject(t0, "upload", "invalid_json", body(startReport("rp1", { nsapp: "jellyfin" }))),
      reject(
        t0 + 90_000,
        "updatestatus",
        "invalid_json",
        body({ status: "failed", error: "exit code 2", random_id: "rp1" }),
      ),
      // Still breaks a rule.
      reject(t0 + 1000, "upload", "invalid_field", body(startReport("rp2", { type: "banana" }))),
      // Broken in a way the current parser repairs: stored, repaired.
      reject(t0 + 2000, "upload", "invalid_json", body(`{"type":"lxc","random_id":"rp3","nsapp":"x","disk_size": ,}`)),
      // An update for an id nobody started: held.
      reject(t0 + 3000, "updatestatus", "invalid_field", body({ status: "done", random_id: "rp4" })),
      // Never replayed.
      reject(t0 + 4000, "upload", "repaired", body(startReport("rp5"))),
      reject(t0 + 5000, "updatestatus", "already_final", body({ status: "done", random_id: "rp1" })),
    ]);
    const before = await t.rejected();
    const deps = { store: t.store, commit: (ops: readonly WriteOp[]) => t.store.write(ops) };

    const dry = await replayRejected(deps, { normalize, dryRun: true, now: t.clock() });
    expect(dry).toEqual({ dry_run: true, tried: 5, results: { valid: 4, "still invalid": 1 }, skipped: 0 });
    expect(await t.rejected()).toEqual(before);
    expect((await records(t.store)).size).toBe(0);

    const limited = await replayRejected(deps, { normalize, limit: 1, reasons: ["invalid_json"], now: t.clock() });
    expect(limited).toEqual({ dry_run: false, tried: 1, results: { created: 1 }, skipped: 0 });
    const first = await replayRejected(deps, { normalize, now: t.clock() });
    expect(first).toEqual({
      dry_run: false,
      tried: 4,
      results: { updated: 1, "still invalid": 1, created: 1, held: 1 },
      skipped: 1,
    });

    const got = await records(t.store);
    expect(got.get("rp1")).toMatchObject({
      nsapp: "jellyfin",
      outcome: "failed",
      error: "exit code 2",
      created_at: new Date(t0).toISOString(),
      duration_s: 90,
      repaired: false,
    });
    expect(got.get("rp3")).toMatchObject({
      created_at: new Date(t0 + 2000).toISOString(),
      disk_size: null,
      repaired: true,
    });
    expect(got.has("rp5")).toBe(false);
    const marks = Object.fromEntries((await t.rejected()).map((e) => [e.id, e.replayResult]));
    expect(Object.values(marks)).toEqual([
      "created",
      "updated",
      'still invalid: type must be one of lxc, vm, turnkey, pve, addon, tool, got "banana"',
      "created",
      "held",
      null,
      null,
      null, // the new "repaired" entry the repaired body made, as ingestion would have
    ]);
    expect((await t.rejected()).at(-1)).toMatchObject({ reason: "repaired", randomId: "rp3" });
    expect((await verifyRollups(t.store)).ok).toBe(true);

    // Done entries are not tried again; the still-invalid one is.
    const second = await replayRejected(deps, { normalize, now: t.clock() });
    expect(second).toEqual({ dry_run: false, tried: 1, results: { "still invalid": 1 }, skipped: 4 });
    expect((await records(t.store)).size).toBe(2);
  });

  test("the CLI: --reason checked, summary printed, quiet when piped", async () => {
    const path = populated("replay.db", 4); // holds one invalid_json entry "{{{"
    await expect(run(replay, path, { reason: "repaired" })).rejects.toThrow(/never|applied already/);
    await expect(run(replay, path, { limit: "0" })).rejects.toThrow(UsageError);
    const r = await cli(["replay", "--db", path]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toMatchObject({ tried: 1, results: { "still invalid": 1 } });
    const c = new Database(path, { readonly: true });
    expect(c.query("SELECT replay_result FROM rejected_reports WHERE reason = 'invalid_json'").get()).toEqual({
      replay_result: expect.stringMatching(/^still invalid: /),
    });
    c.close();
  });
});

// ---------------------------------------------------------------- help

test("every command has its own --help", async () => {
  const expectations: Record<string, string[]> = {
    backup: ["<file>", "--force"],
    restore: ["<file>", "--force"],
    export: [
      "--format",
      "--out",
      "--nsapp",
      "--os-type",
      "--os-version",
      "--pve-version",
      "--from",
      "--to",
      "--days",
      "--q",
    ],
    import: ["<file|->"],
    prune: ["--older-than", "--dry-run"],
    replay: ["--reason", "--limit", "--dry-run"],
  };
  const names = Object.keys(expectations);
  const [overview, ...helps] = await Promise.all([cli(["--help"]), ...names.map((name) => cli([name, "--help"]))]);
  for (const [i, name] of names.entries()) {
    const words = expectations[name]!;
    expect(overview!.stdout).toContain(`  ${name} `);
    const r = helps[i]!;
    expect(r.code).toBe(0);
    expect(r.stdout).toStartWith(`installstats ${name}`);
    for (const w of words) expect(r.stdout).toContain(w);
  }
});
