// installstats copy between engines (issue 17 item 4): an SQLite file into PostgreSQL and back
// into a new file, the whole data set the same (every execution field for field, every held
// report, every entry of the rejected-reports log with its body), verified at each end; a copy
// killed midway (SIGKILL) and run again ends with everything exactly once; progress is one
// updating line on a terminal and nothing when stderr is not one.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import postgres from "postgres";
import { defaults } from "../../src/config.ts";
import type { HeldReport } from "../../src/domain/lifecycle.ts";
import { intake } from "../../src/ingest/pipeline.ts";
import type { RejectedEntry } from "../../src/store/contract/rejected.ts";
import type { WriteOp } from "../../src/store/contract/store.ts";
import { openEngine } from "../../src/store/open.ts";
import { compiledBinary } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";

setDefaultTimeout(180_000);

let pg: PgServer;
let bin: string;
beforeAll(async () => {
  [pg, bin] = await Promise.all([startPostgres(), compiledBinary()]);
});
afterAll(() => pg?.stop());

const run = (...args: string[]) => {
  const r = Bun.spawnSync([bin, ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};

const NORMALIZE = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };
const T0 = Date.parse("2026-05-01T00:00:00Z");
const text = (s: string) => new TextEncoder().encode(s);

/**
 * Held reports and log entries written into the database at `location` through the service's own
 * pipeline: final reports for installs never started (held), broken JSON (logged; `repeats` of
 * them the same body, stored once), repaired bodies (applied and logged), and with `headsAfter`
 * the log budget lowered so that later bodies keep only their head.
 */
async function addSideData(
  location: string,
  n: { held: number; junk: number; repeats?: number; headsAfter?: number },
): Promise<void> {
  const engine = await openEngine(location, { durability: "normal", migrate: true, create: true });
  const ops: WriteOp[] = [];
  const flush = async () => void (await engine.store.write(ops.splice(0)));
  for (let i = 0; i < n.held; i++) {
    const r = intake(
      "updatestatus",
      text(
        JSON.stringify({
          random_id: `held-${i}`,
          status: i % 3 ? "failed" : "done",
          error: `exit code ${i % 7}: ${"E: unable to fetch\n".repeat(i % 50)}`,
        }),
      ),
      T0 + i,
      NORMALIZE,
    );
    if (!r.ok) throw new Error("a held report was refused");
    ops.push(r.op);
    if (ops.length === 500) await flush();
  }
  for (let i = 0; i < n.junk; i++) {
    if (n.headsAfter === i) {
      await flush();
      engine.store.setLimits({
        logBytes: (await engine.store.budgets()).log.usedBytes + 64 * 1024,
        heldBytes: defaults.heldBudget,
      });
    }
    const raw =
      i % 10 === 0
        ? `{"random_id": "rep-${i}", "type": "lxc", "nsapp": "x", "status": "installing",}`
        : `{"random_id": "junk-${i}", "error": "${crypto.randomUUID().repeat(i % 60)}`;
    const r = intake(i % 10 !== 0 && i % 4 === 0 ? "telemetry" : "upload", text(raw), T0 + i, NORMALIZE);
    ops.push(r.ok ? r.op : { kind: "reject", rejection: r.rejection, at: T0 + i });
    if (n.repeats && i % 5 === 1)
      for (let k = 0; k < n.repeats; k++)
        ops.push({
          kind: "reject",
          rejection: {
            endpoint: "upload",
            reason: "invalid_json",
            field: null,
            message: "not JSON",
            randomId: null,
            body: text(`{"same": ${"x".repeat(5000)}`),
          },
          at: T0 + i,
        });
    if (ops.length >= 500) await flush();
  }
  await flush();
  // Replays are part of an entry, and are copied with it.
  const [newest] = await engine.store.listRejected({ limit: 1 });
  if (newest)
    await engine.store.write([
      { kind: "mark-replayed", rejectedId: newest.id, result: "still invalid_json", at: T0 + 9e6 },
    ]);
  await engine.close();
}

/** Every held report and log entry of a database (entries without the id their database gave them). */
async function sideData(location: string) {
  const engine = await openEngine(location, { durability: "normal", migrate: true, create: false });
  try {
    const held: HeldReport[] = [];
    for await (const chunk of engine.store.heldChunks()) held.push(...chunk);
    const log: Omit<RejectedEntry, "id">[] = [];
    for await (const chunk of engine.store.rejectedChunks())
      log.push(...chunk.map(({ id: _, ...e }) => ({ ...e, body: new Uint8Array(e.body) })));
    return { held, log, budgets: await engine.store.budgets() };
  } finally {
    await engine.close();
  }
}

const exported = (db: string) => run("export", "--db", db, "--format", "ndjson").out;

describe("installstats copy", () => {
  test("SQLite -> PostgreSQL -> SQLite keeps every execution, held report and log entry as it was, and verifies", async () => {
    const url = await createDatabase(pg, "copied");
    const dir = tempDir("installstats-copy-");
    const original = join(dir, "original.db");
    const back = join(dir, "back.db");
    expect(run("seed", "--db", original, "--records", "3000", "--profile", "upload").code).toBe(0);
    await addSideData(original, { held: 300, junk: 600, repeats: 2, headsAfter: 500 });
    const source = await sideData(original);
    expect(source.held).toHaveLength(300);
    expect(source.log.filter((e) => !e.bodyKept).length).toBeGreaterThan(20); // head-only entries
    expect(source.log.filter((e) => e.reason === "repaired").length).toBe(60);
    expect(source.budgets.log.deduplicated).toBeGreaterThan(100);
    const records = source.log.length;

    const there = run("copy", "--from", original, "--to", url);
    expect(there.err).toBe(""); // not a terminal: no progress lines
    expect(JSON.parse(there.out)).toMatchObject({
      from: original,
      to: url,
      executions: { read: 3060, copied: 3060, duplicates: 0 }, // the seed's, and the repaired start reports
      held: { read: 300, copied: 300, duplicates: 0 },
      rejected: { read: records, copied: records, duplicates: 0, cut: 0, dropped: 0 },
      verified: {
        ok: true,
        counts: {
          executions: { source: 3060, target: 3060 },
          held: { source: 300, target: 300 },
          rejected: { source: records, target: records },
        },
        rollups: { ok: true, records: 3060, mismatches: 0 },
        problems: [],
      },
    });

    const home = run("copy", "--from", url, "--to", back);
    expect(JSON.parse(home.out)).toMatchObject({
      executions: { copied: 3060 },
      held: { copied: 300 },
      rejected: { copied: records },
      verified: { ok: true },
    });

    // Every field of every execution, in the same order; every held report and log entry.
    const before = exported(original);
    expect(before.trim().split("\n")).toHaveLength(3060);
    expect(exported(back)).toBe(before);
    expect(exported(url)).toBe(before);
    for (const copy of [await sideData(url), await sideData(back)]) {
      expect(copy.held).toEqual(source.held);
      expect(copy.log).toEqual(source.log);
      expect(copy.budgets.log.entries).toBe(records);
    }

    // Again: everything is there already; nothing is doubled.
    const again = JSON.parse(run("copy", "--from", original, "--to", url).out);
    expect(again).toMatchObject({
      executions: { copied: 0, duplicates: 3060 },
      held: { copied: 0, duplicates: 300 },
      rejected: { copied: 0, duplicates: records },
      verified: { ok: true },
    });
    expect((await sideData(url)).log).toHaveLength(records);
  });

  test("a copy killed midway (twice, SIGKILL) is finished by running it again: everything exactly once", async () => {
    const url = await createDatabase(pg, "interrupted");
    const original = join(tempDir("installstats-copy-"), "original.db");
    expect(run("seed", "--db", original, "--records", "4000", "--profile", "upload").code).toBe(0);
    await addSideData(original, { held: 500, junk: 3000 });
    const source = await sideData(original);
    const watch = postgres(url, { max: 1, onnotice: () => {} });
    const count = async (table: string) =>
      (await watch.unsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n;
    try {
      /** Starts the copy and kills it once `table` has rows; what the table holds then. */
      const killWhen = async (table: string): Promise<number> => {
        const proc = Bun.spawn([bin, "copy", "--from", original, "--to", url], { stdout: "pipe", stderr: "pipe" });
        for (;;) {
          const n = await count(table).catch(() => 0); // the tables may not exist yet
          if (n > 0 || proc.exitCode !== null) break;
          await Bun.sleep(5);
        }
        proc.kill("SIGKILL");
        await proc.exited;
        return count(table);
      };
      const executionsAtKill = await killWhen("executions");
      expect(executionsAtKill).toBeLessThan(4300); // cut short during the executions
      const entriesAtKill = await killWhen("rejected_reports");
      expect(entriesAtKill).toBeGreaterThan(0);
      expect(entriesAtKill).toBeLessThan(source.log.length); // cut short during the log

      const rest = run("copy", "--from", original, "--to", url);
      expect(rest.code).toBe(0);
      const summary = JSON.parse(rest.out);
      expect(summary).toMatchObject({
        executions: { read: 4300, copied: 0, duplicates: 4300 }, // the seed's, and the repaired start reports
        held: { read: 500, copied: 0, duplicates: 500 },
        rejected: { read: source.log.length, copied: source.log.length - entriesAtKill, duplicates: entriesAtKill },
        verified: { ok: true, problems: [] },
      });
      expect({
        executions: await count("executions"),
        held: await count("held_reports"),
        log: await count("rejected_reports"),
      }).toEqual({ executions: 4300, held: 500, log: source.log.length });
      const copied = await sideData(url);
      expect(copied.held).toEqual(source.held);
      expect(copied.log).toEqual(source.log);
    } finally {
      await watch.end();
    }
  });

  test("progress: one line rewritten in place on a terminal, nothing when stderr is not one", async () => {
    const url = await createDatabase(pg, "progress");
    const original = join(tempDir("installstats-copy-"), "original.db");
    expect(run("seed", "--db", original, "--records", "2000", "--profile", "upload").code).toBe(0);
    await addSideData(original, { held: 50, junk: 50 });
    // script(1) gives the copy a terminal and writes what it showed to stdout.
    const r = Bun.spawnSync(["script", "-qec", `'${bin}' copy --from '${original}' --to '${url}'`, "/dev/null"], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const shown = r.stdout.toString();
    expect(r.exitCode).toBe(0);
    expect(shown).toContain("\r\x1b[Kcopying executions: ");
    expect(shown).toMatch(/\r\x1b\[K\r?\n?\{"from"/); // cleared before the summary
    expect(shown.split("\n").filter((l) => l.includes("copying")).length).toBe(1); // one line, rewritten
  });

  test("mistakes: one line with the cause", async () => {
    const url = await createDatabase(pg, "mistakes");
    expect(run("copy", "--from", "/nowhere/x.db", "--to", url).err.trim()).toBe(
      "installstats: no database at /nowhere/x.db; name the right one with --from",
    );
    expect(run("copy", "--to", url).err.trim()).toBe(
      "installstats: copy takes --from <db> and --to <db>: installstats copy --from installstats.db --to postgres://user@host/db",
    );
    expect(run("copy", "--from", url, "--to", url).err.trim()).toBe(
      `installstats: --from and --to are the same database (${url})`,
    );
  });
});
