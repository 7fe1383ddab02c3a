// Storage faults are seen (issue 15): database files replaced or removed under a running server
// stop acknowledgements (503) and are reported by health, with what was committed saved; damaged
// pages and values are a clear error for reads and a result for verify, never a crash.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaults, type Config } from "../../src/config.ts";
import { UNDESCRIBED } from "../../src/domain/execution.ts";
import { createLogger } from "../../src/log.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { createRuntime } from "../../src/runtime.ts";
import { StorageDamagedError } from "../../src/store/contract/errors.ts";
import { DatabaseOpenError } from "../../src/store/engine.ts";
import { openSqliteEngine } from "../../src/store/sqlite/engine.ts";
import { startReport } from "../helpers/app.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const CHECKPOINTER = new URL("../../src/store/sqlite/checkpointer.ts", import.meta.url);

function tempDb(): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "installstats-faults-"));
  return { dir, path: join(dir, "installstats.db") };
}

/** A service over a database file, as `serve` builds it, with a log the test reads. */
async function fileService(path: string, opts: { serve?: boolean; config?: Partial<Config> } = {}) {
  const engine = openSqliteEngine(path, { durability: "full", migrate: true });
  const lines: string[] = [];
  const log = createLogger("debug", (line) => lines.push(line), Date.now);
  const runtime = await createRuntime(
    { ...defaults, db: path, ...opts.config },
    {
      clock: Date.now,
      log,
      version: "test",
      workers: opts.serve
        ? { checkpointer: CHECKPOINTER, scanner: new URL("../../src/store/sqlite/scanner.ts", import.meta.url) }
        : undefined,
    },
    engine,
  );
  const post = async (p: string, body: object) => {
    const res = await runtime.app.handle(
      new Request(`http://localhost${p}`, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      }),
    );
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  // Health as the composition root serves it: the engine's view beside the writer's.
  const healthz = async () => {
    const res = await runtime.app.handle(new Request("http://localhost/healthz"));
    return {
      status: res.status,
      body: (await res.json()) as {
        status: string;
        storage: {
          writable: boolean;
          problems?: string[];
          integrity?: { ok: boolean } | null;
          last_error: string | null;
        };
      },
    };
  };
  return { engine, runtime, store: engine.store, lines, post, healthz };
}

const countIn = (path: string): number => {
  const db = new Database(path, { readonly: true });
  try {
    return db.query<{ n: number }, []>("SELECT count(*) AS n FROM executions").get()!.n;
  } finally {
    db.close();
  }
};

describe("files replaced or removed under the server", () => {
  test("WAL removed: no more acknowledgements, health 503 naming it; everything acknowledged is in the database file", async () => {
    const { dir, path } = tempDb();
    const s = await fileService(path);
    for (let i = 0; i < 20; i++) expect((await s.post("/upload", startReport(`wal-${i}`))).status).toBe(201);
    expect((await s.healthz()).status).toBe(200);
    expect(await (await s.runtime.app.handle(new Request("http://localhost/metrics"))).text()).toMatch(
      /^installstats_storage_writable 1$/m,
    );
    expect(existsSync(`${path}-wal`)).toBe(true);

    rmSync(`${path}-wal`);
    const refused = await s.post("/upload", startReport("after-removal"));
    expect(refused.status).toBe(503);
    expect(refused.body.error).toBe("storage_unavailable");
    const h = await s.healthz();
    expect(h.status).toBe(503);
    expect(h.body.status).toBe("degraded");
    expect(h.body.storage.writable).toBe(false);
    expect(h.body.storage.problems!.join(" ")).toContain(`the WAL file ${path}-wal was removed`);
    const metrics = await (await s.runtime.app.handle(new Request("http://localhost/metrics"))).text();
    expect(metrics).toMatch(/^installstats_storage_writable 0$/m);
    expect(metrics).toMatch(/^installstats_storage_problems [1-9]\d*$/m);
    // For good: the next write too (the files must be opened afresh: a restart).
    expect((await s.post("/upload", startReport("later"))).status).toBe(503);
    // Reads still answer from what this connection has.
    const res = await s.runtime.app.handle(new Request("http://localhost/api/installs/wal-3"));
    expect(res.status).toBe(200);

    // A crash now loses nothing acknowledged: the WAL this connection held was copied into the database file.
    expect(countIn(path)).toBeGreaterThanOrEqual(20);
    const fresh = openSqliteEngine(path, { durability: "full", migrate: true });
    const ids = new Set((await fresh.store.listExecutions({}, { limit: 100 })).rows.map((r) => r.randomId));
    for (let i = 0; i < 20; i++) expect(ids.has(`wal-${i}`)).toBe(true);
    await fresh.close();
    await s.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("database file replaced: writes refused, and the data the server had is copied beside it", async () => {
    const { dir, path } = tempDb();
    const s = await fileService(path);
    for (let i = 0; i < 5; i++) expect((await s.post("/upload", startReport(`db-${i}`))).status).toBe(201);
    // Someone restores another file over it while the server runs.
    const other = join(dir, "other.db");
    writeFileSync(other, "");
    renameSync(other, path);
    expect((await s.post("/upload", startReport("after"))).status).toBe(503);
    const h = await s.healthz();
    expect(h.status).toBe(503);
    const problem = h.body.storage.problems!.join(" ");
    expect(problem).toContain(`the database file ${path} was replaced`);
    const rescued = readdirSync(dir).find((f) => f.startsWith("installstats.db.rescued-"));
    expect(rescued).toBeDefined();
    expect(problem).toContain(rescued!);
    // Every acknowledged report, and the refused one, whose batch had committed into the replaced file before it was refused.
    expect(countIn(join(dir, rescued!))).toBe(6);
    await s.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("shared-memory file removed: writes refused", async () => {
    const { dir, path } = tempDb();
    const s = await fileService(path);
    expect((await s.post("/upload", startReport("shm-0"))).status).toBe(201);
    rmSync(`${path}-shm`);
    expect((await s.post("/upload", startReport("shm-1"))).status).toBe(503);
    expect((await s.healthz()).body.storage.problems!.join(" ")).toContain("shared-memory file");
    await s.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("serving: seen within a second without any write, logged once as one clear line; quick_check runs at start", async () => {
    const { dir, path } = tempDb();
    const s = await fileService(path, { serve: true });
    expect((await s.post("/upload", startReport("serve-0"))).status).toBe(201);
    for (let i = 0; i < 100 && !s.lines.some((l) => l.includes("integrity check")); i++) await Bun.sleep(20);
    expect(s.lines.find((l) => l.includes("integrity check"))).toContain("integrity check passed");
    expect((await s.healthz()).body.storage.integrity).toMatchObject({ ok: true, problems: [] });

    rmSync(`${path}-wal`);
    for (let i = 0; i < 100 && !s.lines.some((l) => l.includes("files changed")); i++) await Bun.sleep(20);
    const faults = s.lines.filter((l) => l.includes("database files changed under the server"));
    expect(faults).toHaveLength(1);
    expect(JSON.parse(faults[0]!)).toMatchObject({ level: "error", problem: expect.stringContaining("WAL file") });
    expect((await s.post("/upload", startReport("serve-1"))).status).toBe(503);
    expect(s.lines.filter((l) => l.includes("database files changed under the server"))).toHaveLength(1);
    await s.runtime.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });

  test("a checkpoint and the end of a server leave no false alarm (the WAL is truncated, not replaced)", async () => {
    const { dir, path } = tempDb();
    const s = await fileService(path);
    for (let i = 0; i < 5; i++) await s.post("/upload", startReport(`ok-${i}`));
    s.engine.sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
    // Another connection (a CLI command beside the server) opens and closes the database.
    const cli = new Database(path);
    cli.query("SELECT count(*) FROM executions").get();
    cli.close();
    expect((await s.post("/upload", startReport("ok-5"))).status).toBe(201);
    expect((await s.healthz()).status).toBe(200);
    await s.runtime.stop();
    rmSync(dir, { recursive: true, force: true });
  });
});

/** A database of `n` installs over 60 days, its rollups folded (stored), closed. */
async function seeded(n: number): Promise<{ dir: string; path: string }> {
  const { dir, path } = tempDb();
  const engine = openSqliteEngine(path, { durability: "normal", migrate: true });
  const start = Date.parse("2026-03-01T00:00:00Z");
  await engine.store.write(
    Array.from({ length: n }, (_, i) => {
      const at = start + Math.floor((i / n) * 60 * 86_400_000);
      return {
        kind: "load" as const,
        at,
        execution: { ...seedExecution(`seed-${i}`), nsapp: `app-${i % 7}`, createdAt: at, updatedAt: at },
      };
    }),
  );
  await engine.store.write([
    { kind: "fold", until: Date.parse("2026-06-01T00:00:00Z"), at: Date.parse("2026-06-01T00:00:00Z") },
  ]);
  await engine.close();
  return { dir, path };
}

/** Overwrites bytes in the middle of a leaf page of `table` (its cell pointers): the page no longer parses. */
function damagePage(path: string, table: string): number {
  // Every page in the database file first (a closed engine's connection may still hold the WAL).
  const rw = new Database(path);
  rw.run("PRAGMA wal_checkpoint(TRUNCATE)");
  rw.close();
  const db = new Database(path, { readonly: true });
  const pages = db
    .query<{ pageno: number }, [string]>(
      "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno",
    )
    .all(table);
  const pageSize = db.query<{ page_size: number }, []>("PRAGMA page_size").get()!.page_size;
  db.close();
  const page = pages[Math.floor(pages.length / 3)]!.pageno;
  const fd = openSync(path, "r+");
  writeSync(fd, Buffer.alloc(64, 0xa5), 0, 64, (page - 1) * pageSize + 8);
  closeSync(fd);
  return page;
}

describe("damaged data", () => {
  test("a damaged rollup cell: reads answer a clear 503 naming it, verify reports it, a rebuild mends it", async () => {
    const { dir, path } = await seeded(500);
    const s = await fileService(path);
    const summary = () => s.runtime.app.handle(new Request("http://localhost/api/stats/summary?days=365"));
    expect((await summary()).status).toBe(200);
    // Bytes changed under the server (through another connection here, so its caches are counted again).
    const other = new Database(path);
    other.run('UPDATE rollups SET data = \'{"dims":{"type":{"lxc":\' WHERE grain = 2');
    other.close();

    const res = await summary();
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe("storage_unavailable");
    expect(JSON.stringify(body)).not.toContain("    at ");
    const logged = s.lines.find((l) => l.includes("rollup cell month"));
    expect(logged).toContain("run installstats verify");
    expect(logged).not.toContain("    at ");
    expect((await s.healthz()).body.storage.problems!.join(" ")).toContain("rollup cell month");

    const check = await verifyRollups(s.store);
    expect(check.ok).toBe(false);
    expect(check.damaged.join("\n")).toContain("rollup cell month");
    await s.store.rebuildRollups();
    expect(await verifyRollups(s.store)).toMatchObject({ ok: true, damaged: [] });
    expect((await summary()).status).toBe(200);
    await s.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("flipped bytes in a page of executions: quick_check names the table, reads over it answer 503, verify reports instead of crashing", async () => {
    const { dir, path } = await seeded(3000);
    const page = damagePage(path, "executions");
    const engine = openSqliteEngine(path, { durability: "normal", migrate: true });
    const integrity = await engine.checkIntegrity("quick");
    expect(integrity[0]).toStartWith(`executions: page ${page}`);
    expect(await engine.checkIntegrity()).not.toEqual(["ok"]);

    await expect(engine.store.listExecutions({}, { limit: 5000 })).rejects.toBeInstanceOf(StorageDamagedError);
    const health = await engine.health();
    expect(health.problems.join(" ")).toContain("database disk image is malformed");

    const check = await verifyRollups(engine.store);
    expect(check.ok).toBe(false);
    expect(check.damaged.length).toBeGreaterThan(0);
    expect(check.damaged[0]).toMatch(/^day \d{4}-\d\d-\d\d: storage is damaged: database disk image is malformed/);
    await engine.close();

    // Over HTTP: a clear error, no stack, and the server goes on answering what it can.
    const service = await fileService(path);
    // A text filter matching nothing scans every record, the damaged page too.
    const scan = await service.runtime.app.handle(
      new Request("http://localhost/api/installs?q=nothing-matches&days=365"),
    );
    expect(scan.status).toBe(503);
    const body = (await scan.json()) as { error: string; message: string };
    expect(body.error).toBe("storage_unavailable");
    expect(JSON.stringify(body)).not.toContain("    at ");
    expect(service.lines.some((l) => l.includes("storage is damaged") && l.includes("run installstats verify"))).toBe(
      true,
    );
    const healthy = await service.runtime.app.handle(new Request("http://localhost/api/installs/seed-2999"));
    expect(healthy.status).toBe(200);
    await service.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("installstats verify on a damaged database: exit 1 with what is damaged, no stack", async () => {
    const { dir, path } = await seeded(3000);
    damagePage(path, "executions");
    const cell = new Database(path);
    cell.run("UPDATE rollups SET errors = 'not json' WHERE id = (SELECT min(id) FROM rollups WHERE grain = 2)");
    cell.close();
    const run = Bun.spawnSync(["bun", join(ROOT, "src/main.ts"), "verify", "--db", path], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = run.stdout.toString();
    const err = run.stderr.toString();
    expect(run.exitCode).toBe(1);
    expect(err).not.toContain("    at ");
    const result = JSON.parse(out) as { ok: boolean; integrity: string[]; rollups: { damaged: string[] } };
    expect(result.ok).toBe(false);
    expect(result.integrity[0]).toStartWith("executions: page ");
    expect(result.rollups.damaged.some((d) => d.includes("rollup cell month"))).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });

  test("a database damaged where start-up must read is refused with what SQLite's check finds", async () => {
    const { dir, path } = tempDb();
    const e = openSqliteEngine(path, { durability: "normal", migrate: true });
    // Open hours (not yet folded) are recounted from the records at every start.
    await e.store.write(
      Array.from({ length: 2000 }, (_, i) => ({
        kind: "load" as const,
        at: Date.now(),
        execution: { ...seedExecution(`open-${i}`), createdAt: Date.now(), updatedAt: Date.now() },
      })),
    );
    await e.close();
    damagePage(path, "executions");
    // One attempt, as a starting server makes one.
    let refusal: unknown = null;
    try {
      openSqliteEngine(path, { durability: "normal", migrate: true });
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(DatabaseOpenError);
    expect((refusal as Error).message).toContain("is damaged");
    // SQLite's check names the page, or (when a row it cannot read stops the check) the table.
    expect((refusal as Error).message).toMatch(/SQLite's check: executions: (page \d+|.*stopped in this table)/);
    rmSync(dir, { recursive: true, force: true });
  });
});

function seedExecution(id: string) {
  return {
    executionId: id,
    randomId: id,
    attempt: 1,
    kind: "install" as const,
    payloadVersion: null,
    ...UNDESCRIBED,
    type: "lxc",
    ctType: 1,
    diskSize: 8,
    coreCount: 2,
    ramSize: 2048,
    osType: "debian",
    osVersion: "12",
    disableip6: "yes",
    nsapp: "x",
    method: "default",
    pveVersion: "8.2",
    status: "installing",
    outcome: "in_progress" as const,
    error: "y".repeat(300),
    exitCode: null,
    errorCategory: null,
    failedCommand: null,
    failedLine: null,
    installDuration: null,
    createdAt: 0,
    updatedAt: 0,
    durationMs: null,
    installingAt: null,
    validationAt: null,
    configuringAt: null,
    finishedAt: null,
    repaired: false,
  };
}
