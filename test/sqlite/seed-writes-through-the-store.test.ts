// `installstats seed` writing through the store's one write path: exactly the installs asked for,
// in bounded batches, rollups included; the "today" profile written as its clients' reports. The
// generator alone: test/unit/seed-generator-realistic-and-deterministic.test.ts.
import { beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { createSqliteStore } from "../../src/store/sqlite/store.ts";
import type { Store, WriteOp } from "../../src/store/contract/store.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { generateInstalls, seedDatabase, seedOptions, type SeedOptions } from "../../src/seed/seed.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

const DAY = 86_400_000;
const END = Date.UTC(2026, 10, 21, 12, 34, 56, 789);

/** How many items have each key, in the order the keys first come. */
const countBy = <T>(items: Iterable<T>, key: (t: T) => string): Map<string, number> =>
  new Map([...Map.groupBy(items, key)].map(([k, group]) => [k, group.length]));

describe("seedDatabase", () => {
  const small = (records: number, extra: Partial<SeedOptions> = {}): SeedOptions =>
    seedOptions({ records, days: 30, end: END, seed: 3, batchSize: 3000, ...extra });

  function memoryStore() {
    const { sqlite, db } = openDatabase(":memory:", { durability: "normal", migrate: true });
    return { sqlite, store: createSqliteStore(sqlite, db) };
  }

  test("writes exactly N installs through Store.write, in bounded batches, rollups included", async () => {
    const { sqlite, store } = memoryStore();
    const batches: WriteOp[][] = [];
    const spy: Store = { ...store, write: (ops) => (batches.push([...ops]), store.write(ops)) };
    const progress: number[] = [];
    const options = small(20_000);
    const result = await seedDatabase(spy, options, (p) => {
      expect(p.total).toBe(20_000);
      progress.push(p.written);
    });
    expect(result.records).toBe(20_000);
    expect(result.seconds).toBeGreaterThan(0);
    expect(sqlite.query("SELECT count(*) AS n FROM executions").get()).toEqual({ n: 20_000 });
    expect(progress[progress.length - 1]).toBe(20_000);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    for (const batch of batches) expect(batch.length).toBeLessThanOrEqual(3000);
    expect(batches.length).toBeGreaterThanOrEqual(Math.ceil(20_000 / 3000)); // one load op per record

    // Rows are what was written: same outcomes, times and durations.
    const rows = batches.flat().flatMap((op) => (op.kind === "load" ? [op.execution] : []));
    expect(rows.length).toBe(20_000);
    const expected = countBy(rows, (row) => row.outcome);
    const stored = sqlite.query("SELECT outcome, count(*) AS n FROM executions GROUP BY outcome").all() as {
      outcome: string;
      n: number;
    }[];
    expect(new Map(stored.map((s) => [s.outcome, s.n]))).toEqual(expected);
    const span = sqlite
      .query("SELECT min(created_at) AS lo, max(updated_at) AS hi, min(duration_ms) AS d FROM executions")
      .get() as { lo: number; hi: number; d: number };
    expect(span.lo).toBeGreaterThanOrEqual(END - 30 * DAY);
    expect(span.hi).toBeLessThanOrEqual(END);
    expect(span.d).toBeGreaterThanOrEqual(4000);
    expect(
      sqlite.query("SELECT count(*) AS n FROM executions WHERE outcome != 'in_progress' AND duration_ms IS NULL").get(),
    ).toEqual({ n: 0 });
    // Nothing was held, conflicting or rejected; rollups and signatures were kept.
    expect(sqlite.query("SELECT count(*) AS n FROM held_reports").get()).toEqual({ n: 0 });
    expect(sqlite.query("SELECT count(*) AS n FROM rejected_reports").get()).toEqual({ n: 0 });
    expect((sqlite.query("SELECT count(*) AS n FROM rollups").get() as { n: number }).n).toBeGreaterThan(30);
    expect((sqlite.query("SELECT count(*) AS n FROM error_signatures").get() as { n: number }).n).toBeGreaterThan(50);
    const failed = sqlite.query("SELECT error FROM executions WHERE outcome = 'failed'").all() as {
      error: string | null;
    }[];
    expect(failed.every((f) => f.error !== null && f.error !== "")).toBe(true);
    store.close();
  }, 60_000); // generous for a loaded machine

  test("refuses to seed the same seed and window twice; another seed or window adds to the database", async () => {
    const { sqlite, store } = memoryStore();
    await seedDatabase(store, small(300));
    await expect(seedDatabase(store, small(300))).rejects.toThrow(/already holds the records of seed 3/);
    await expect(seedDatabase(store, small(50))).rejects.toThrow(/already holds the records of seed 3/);
    expect(sqlite.query("SELECT count(*) AS n FROM executions").get()).toEqual({ n: 300 });
    expect((await seedDatabase(store, small(200, { seed: 4 }))).records).toBe(200);
    expect((await seedDatabase(store, small(100, { days: 29 }))).records).toBe(100);
    expect((await seedDatabase(store, small(100, { end: END - DAY }))).records).toBe(100);
    expect(sqlite.query("SELECT count(*) AS n FROM executions").get()).toEqual({ n: 700 });
    expect(sqlite.query("SELECT count(*) AS n FROM rejected_reports").get()).toEqual({ n: 0 });
    store.close();
  });

  test("rejects nonsense options", async () => {
    const { store } = memoryStore();
    await expect(seedDatabase(store, small(-1))).rejects.toThrow(RangeError);
    await expect(seedDatabase(store, small(10, { days: 0 }))).rejects.toThrow(RangeError);
    await expect(seedDatabase(store, small(10, { batchSize: 1 }))).rejects.toThrow(RangeError);
    await expect(seedDatabase(store, small(10, { end: END + 0.5 }))).rejects.toThrow(RangeError);
    expect(() => [...generateInstalls(small(10, { records: 1.5 }))]).toThrow(RangeError);
    store.close();
  });
});

describe("today's traffic (profile today)", () => {
  const END_TODAY = Date.UTC(2026, 10, 27, 12);
  let sqlite: ReturnType<typeof openDatabase>["sqlite"];
  let store: Store;
  let written: { records: number; writes: number };
  const rows = <T>(query: string, ...params: (string | number)[]): T[] => sqlite.query(query).all(...params) as T[];
  const one = <T>(query: string, ...params: (string | number)[]): T => sqlite.query(query).get(...params) as T;

  beforeAll(async () => {
    const conn = openDatabase(":memory:", { durability: "normal", migrate: true });
    sqlite = conn.sqlite;
    store = createSqliteStore(conn.sqlite, conn.db);
    written = await seedDatabase(
      store,
      seedOptions({ records: 24_000, days: 365, end: END_TODAY, seed: 9, profile: "today" }),
    );
  });

  test("every install written through the reports its client sends: more reports than installs, more executions (retries) than installs", async () => {
    expect(written.records).toBe(24_000);
    expect(written.writes).toBeGreaterThan(24_000 * 2.5);
    const { n, installs } = one<{ n: number; installs: number }>(
      "SELECT count(*) AS n, count(DISTINCT random_id) AS installs FROM executions",
    );
    expect(installs).toBe(24_000);
    expect(n / installs).toBeGreaterThan(1.02);
    // Retries are later attempts of the same install, each its own execution.
    const retries = one<{ n: number }>("SELECT count(*) AS n FROM executions WHERE attempt > 1").n;
    expect(retries).toBe(n - installs);
    expect(
      one<{ n: number }>("SELECT count(*) AS n FROM executions WHERE attempt > 1 AND outcome = 'success'").n,
    ).toBeGreaterThan(0); // rescued
    // Nothing held, refused or logged: the clients' reports are well-formed and in order.
    expect(one<{ n: number }>("SELECT count(*) AS n FROM held_reports").n).toBe(0);
    expect(one<{ n: number }>("SELECT count(*) AS n FROM rejected_reports").n).toBe(0);
    // Every instant a whole millisecond.
    expect(
      one<{ n: number }>(
        "SELECT count(*) AS n FROM executions WHERE typeof(created_at) != 'integer' OR typeof(updated_in) != 'integer' OR typeof(validation_in) NOT IN ('integer', 'null') OR typeof(configuring_in) NOT IN ('integer', 'null')",
      ).n,
    ).toBe(0);
    const check = await verifyRollups(store);
    expect({ ok: check.ok, mismatches: check.mismatches, gaps: check.signatureGaps }).toEqual({
      ok: true,
      mismatches: [],
      gaps: 0,
    });
  });

  test("the older part of the window is /upload only; then /telemetry v1, then v2 as well", () => {
    const client = (from: number, to: number) =>
      new Map(
        rows<{ v: number | null; n: number }>(
          "SELECT payload_version AS v, count(*) AS n FROM executions WHERE created_at >= ? AND created_at < ? GROUP BY 1",
          from,
          to,
        ).map((r) => [r.v, r.n]),
      );
    const oldest = client(END_TODAY - 365 * DAY, END_TODAY - 300 * DAY);
    expect([...oldest.keys()]).toEqual([null]);
    const middle = client(END_TODAY - 250 * DAY, END_TODAY - 150 * DAY);
    expect(middle.get(1)!).toBeGreaterThan(middle.get(null)!);
    expect(middle.has(2)).toBe(false);
    const newest = client(END_TODAY - 30 * DAY, END_TODAY);
    expect(newest.get(2)!).toBeGreaterThan(newest.get(1)!);
    expect(newest.get(null)!).toBeGreaterThan(0); // old hosts still send /upload
  });

  test("texts name an app by its name: failed commands, error texts and signatures hold no [object Object]", () => {
    expect(
      one<{ n: number }>("SELECT count(*) AS n FROM executions WHERE failed_command IS NOT NULL").n,
    ).toBeGreaterThan(0);
    const broken = (query: string) => one<{ n: number }>(query).n;
    expect(broken("SELECT count(*) AS n FROM executions WHERE failed_command LIKE '%[object %'")).toBe(0);
    expect(broken("SELECT count(*) AS n FROM executions WHERE error LIKE '%[object %'")).toBe(0);
    expect(
      broken(
        "SELECT count(*) AS n FROM error_signatures WHERE signature LIKE '%[object %' OR example LIKE '%[object %'",
      ),
    ).toBe(0);
  });

  test("runs: progress pings, outcomes, exit codes and categories, declines and aborts as each client sends them", () => {
    expect(
      one<{ n: number }>(
        "SELECT count(*) AS n FROM executions WHERE payload_version IS NOT NULL AND type != 'vm' AND kind = 'install' AND validation_at IS NOT NULL AND configuring_at IS NOT NULL",
      ).n,
    ).toBeGreaterThan(5000);
    const outcomes = new Map(
      rows<{ o: string; n: number }>("SELECT outcome AS o, count(*) AS n FROM executions GROUP BY 1").map((r) => [
        r.o,
        r.n,
      ]),
    );
    // Runs that never end are expired 12 h after their start, as the stuck-install job does: unknown.
    for (const o of ["success", "failed", "aborted", "unknown"]) expect(outcomes.get(o) ?? 0).toBeGreaterThan(0);
    const categories = rows<{ c: string }>(
      "SELECT DISTINCT error_category AS c FROM executions WHERE payload_version IS NOT NULL AND error_category IS NOT NULL",
    ).map((r) => r.c);
    for (const c of ["dependency", "network", "shell", "user_aborted", "timeout", "storage", "service"])
      expect(categories).toContain(c);
    // A user's decline: a failure from v1 and older v2 engines, an abort from the newest.
    const declines = rows<{ v: number; status: string; cat: string }>(
      "SELECT payload_version AS v, status, error_category AS cat FROM executions WHERE exit_code IN (113, 114, 122, 253, 254) AND payload_version IS NOT NULL",
    );
    expect(declines.some((d) => d.v === 1 && d.status === "failed")).toBe(true);
    expect(declines.some((d) => d.v === 2 && d.status === "aborted" && d.cat === "user_aborted")).toBe(true);
    expect(declines.some((d) => d.v === 2 && d.status === "failed")).toBe(true);
    // The client's error text: its header line, the failing command, the log tail.
    const failure = one<{ error: string; cmd: string | null }>(
      "SELECT error, failed_command AS cmd FROM executions WHERE payload_version = 2 AND outcome = 'failed' AND failed_command IS NOT NULL LIMIT 1",
    );
    expect(failure.error).toMatch(/^exit_code=\d+ \| .+ \| at line \d+: .+\n---\n/);
    // Tools and addons: one report each, final at once.
    const shots = rows<{ kind: string; n: number; pinged: number }>(
      "SELECT kind, count(*) AS n, sum(validation_at IS NOT NULL) AS pinged FROM executions WHERE payload_version IS NOT NULL AND kind != 'install' GROUP BY 1",
    );
    expect(shots.map((s) => s.kind).sort()).toEqual(["addon", "tool"]);
    for (const s of shots) expect({ kind: s.kind, pinged: s.pinged }).toEqual({ kind: s.kind, pinged: 0 });
  });

  test("hosts: hardware, both meanings of gpu_passthrough, platforms, kernels, repos and forks, app versions", () => {
    const values = (column: string, where = "payload_version IS NOT NULL") =>
      rows<{ v: string }>(`SELECT DISTINCT ${column} AS v FROM executions WHERE ${where}`).map((r) => r.v);
    expect(values("cpu_vendor")).toEqual(expect.arrayContaining(["intel", "amd", "arm"]));
    expect(values("gpu_vendor")).toEqual(expect.arrayContaining(["intel", "nvidia", "amd"]));
    expect(values("gpu_passthrough", "payload_version = 2").sort()).toEqual(["no", "yes"]);
    expect(values("host_gpu", "payload_version = 1")).toEqual(expect.arrayContaining(["igpu", "dgpu", "unknown"]));
    expect(values("gpu_passthrough", "payload_version = 1")).toEqual([null as unknown as string]); // v1's field means the host's GPU: kept apart
    expect(values("platform").sort()).toEqual(["incus", "pve"]);
    expect(values("pve_version", "platform = 'incus'").every((v) => v.startsWith("incus-"))).toBe(true);
    expect(values("arch").sort()).toEqual(["amd64", "arm64"]);
    expect(values("repo_source").sort()).toEqual(["ProxmoxVE", "ProxmoxVED", "external"]);
    expect(values("repo_slug", "repo_source = 'external'").length).toBeGreaterThan(2);
    expect(values("kernel_version", "payload_version = 2").some((v) => /^6\.\d+\.\d+-\d+-pve$/.test(v))).toBe(true);
    expect(values("app_version", "payload_version = 2 AND kind = 'install'").length).toBeGreaterThan(50);
  });

  test("planted failure drivers stand out: jellyfin on PVE 9.0.10, immich on arm64, plex on AMD GPUs", () => {
    const rate = (where: string) => {
      const r = one<{ failed: number; n: number }>(
        `SELECT sum(outcome = 'failed') AS failed, count(*) AS n FROM executions WHERE payload_version IS NOT NULL AND outcome IN ('success', 'failed') AND ${where}`,
      );
      return { n: r.n, rate: r.failed / r.n };
    };
    const cases = [
      ["nsapp = 'jellyfin' AND pve_version = '9.0.10'", "nsapp = 'jellyfin' AND pve_version != '9.0.10'"],
      ["nsapp = 'immich' AND arch = 'arm64'", "nsapp = 'immich' AND arch = 'amd64'"],
      ["nsapp = 'plex' AND gpu_vendor = 'amd'", "nsapp = 'plex' AND gpu_vendor != 'amd'"],
    ];
    for (const [driver, rest] of cases) {
      const d = rate(driver!);
      const r = rate(rest!);
      expect({ driver, n: d.n > 0, stands: d.rate > 3 * r.rate && d.rate > 0.3 }).toEqual({
        driver,
        n: true,
        stands: true,
      });
    }
  });
});
