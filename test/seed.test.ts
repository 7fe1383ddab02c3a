// `installstats seed`: the synthetic data generator (distributions, determinism) and writing
// through the store's one write path.
import { beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { openDatabase } from "../src/store/sqlite/database.ts";
import { createSqliteStore } from "../src/store/sqlite/store.ts";
import type { Store, WriteOp } from "../src/store/contract.ts";
import { errorSignature } from "../src/domain/error-signature.ts";
import { verifyRollups } from "../src/maintenance/verify.ts";
import { generateInstalls, seedDatabase, seedOptions, type SeedInstall, type SeedOptions } from "../src/seed/seed.ts";
import { Rng, buildCatalogue, uuid4, type AppSpec } from "../src/seed/seed-data.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

const DAY = 86_400_000;
const END = Date.UTC(2026, 10, 21, 12, 34, 56, 789);
const SAMPLE = 60_000;

const catalogue = new Map<string, AppSpec>(buildCatalogue().map((app) => [app.name, app]));
let sample: SeedInstall[] = [];
const opts: SeedOptions = seedOptions({ records: SAMPLE, days: 365, end: END, seed: 7 });

beforeAll(async () => {
  sample = [...generateInstalls(opts)];
});

const finalOutcome = (r: SeedInstall) => r.update?.outcome ?? r.report.outcome;
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

function countBy<T>(items: Iterable<T>, key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const item of items) {
    const k = key(item);
    m.set(k, (m.get(k) ?? 0) + 1);
  }
  return m;
}

describe("PRNG and ids", () => {
  test("a seed gives the same stream; uuids are version 4 and distinct", async () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const c = new Rng(43);
    const sa = Array.from({ length: 100 }, () => a.u32());
    expect(Array.from({ length: 100 }, () => b.u32())).toEqual(sa);
    expect(Array.from({ length: 100 }, () => c.u32())).not.toEqual(sa);
    const r = new Rng(1);
    const ids = Array.from({ length: 5000 }, () => uuid4(r));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("the catalogue has hundreds of apps of every install type", async () => {
    expect(catalogue.size).toBeGreaterThanOrEqual(250);
    const types = countBy(catalogue.values(), (a) => a.type);
    for (const t of ["lxc", "vm", "turnkey", "pve", "addon", "tool"]) expect(types.get(t) ?? 0).toBeGreaterThan(0);
    expect(types.get("lxc")!).toBeGreaterThan(catalogue.size * 0.7);
    for (const app of catalogue.values()) {
      expect(app.failRange[0]).toBeGreaterThanOrEqual(0.01);
      expect(app.failRange[1]).toBeLessThanOrEqual(0.4);
      expect(app.failRange[0]).toBeLessThan(app.failRange[1]);
      expect(app.medianS).toBeGreaterThanOrEqual(30);
      expect(app.medianS).toBeLessThanOrEqual(600);
    }
  });
});

describe("generator", () => {
  test("exactly N records, deterministic for a seed, different for another", async () => {
    for (const n of [0, 1, 7, 1000]) expect([...generateInstalls({ ...opts, records: n })].length).toBe(n);
    expect(sample.length).toBe(SAMPLE);
    const again = [...generateInstalls({ ...opts, records: 2000 })];
    const twice = [...generateInstalls({ ...opts, records: 2000 })];
    expect(twice).toEqual(again);
    const other = [...generateInstalls({ ...opts, records: 2000, seed: 8 })];
    expect(other.map((r) => r.report.randomId)).not.toEqual(again.map((r) => r.report.randomId));
    expect(new Set(sample.map((r) => r.report.randomId)).size).toBe(SAMPLE);
  });

  test("times lie in [end - days, end], in start order, updates after their start", async () => {
    const from = END - 365 * DAY;
    let previous = -Infinity;
    for (const r of sample) {
      expect(r.at).toBeGreaterThanOrEqual(from);
      expect(r.at).toBeLessThanOrEqual(END);
      expect(r.at).toBeGreaterThanOrEqual(previous);
      previous = r.at;
      if (r.update) {
        expect(r.updateAt!).toBeGreaterThan(r.at);
        expect(r.updateAt!).toBeLessThanOrEqual(END);
      } else expect(r.updateAt).toBeNull();
    }
    // Spread over the whole window, growing over it.
    const firstMonth = sample.filter((r) => r.at < from + 30 * DAY).length;
    const lastMonth = sample.filter((r) => r.at >= END - 30 * DAY).length;
    expect(firstMonth).toBeGreaterThan(SAMPLE * 0.03);
    expect(lastMonth).toBeGreaterThan(firstMonth * 1.5);
  });

  test("daily and weekly rhythm: evening peak, night trough, busier weekends", async () => {
    const byHour = countBy(sample, (r) => String(new Date(r.at).getUTCHours()));
    expect(byHour.get("19")!).toBeGreaterThan(byHour.get("6")! * 2);
    const byDay = countBy(sample, (r) => String(new Date(r.at).getUTCDay()));
    expect(byDay.get("6")!).toBeGreaterThan(byDay.get("2")! * 1.2);
  });

  test("popularity is long-tailed", async () => {
    const apps = [...countBy(sample, (r) => r.report.fields!.nsapp!).values()].sort((a, b) => b - a);
    expect(apps.length).toBeGreaterThan(200);
    const top = apps[0]!;
    const median = apps[Math.floor(apps.length / 2)]!;
    expect(top / SAMPLE).toBeGreaterThan(0.05);
    expect(top / SAMPLE).toBeLessThan(0.3);
    expect(top).toBeGreaterThan(median * 30);
    // The 20 most installed apps are about half of all installs; the long tail the rest.
    const top20 = apps.slice(0, 20).reduce((a, b) => a + b, 0);
    expect(top20 / SAMPLE).toBeGreaterThan(0.35);
    expect(top20 / SAMPLE).toBeLessThan(0.75);
  });

  test("outcomes: mostly done, a few failed, some aborted, a small share still installing", async () => {
    const outcomes = countBy(sample, finalOutcome);
    const share = (o: string) => (outcomes.get(o) ?? 0) / SAMPLE;
    expect(share("success")).toBeGreaterThan(0.8);
    expect(share("success")).toBeLessThan(0.92);
    expect(share("failed")).toBeGreaterThan(0.05);
    expect(share("aborted")).toBeGreaterThan(0.01);
    expect(share("aborted")).toBeLessThan(0.04);
    expect(share("in_progress")).toBeGreaterThan(0.003);
    expect(share("in_progress")).toBeLessThan(0.03);
    expect(outcomes.get("unknown")).toBeUndefined();
    for (const r of sample) {
      expect(r.report.status).toBe("installing");
      expect(r.report.outcome).toBe("in_progress");
      if (r.update) expect(["done", "failed"]).toContain(r.update.status);
    }
  });

  test("every app's failure rate is within its configured range", async () => {
    const byApp = new Map<string, { n: number; failed: number }>();
    for (const r of sample) {
      const s = byApp.get(r.report.fields!.nsapp!) ?? { n: 0, failed: 0 };
      s.n++;
      if (finalOutcome(r) === "failed") s.failed++;
      byApp.set(r.report.fields!.nsapp!, s);
    }
    let checked = 0;
    for (const [name, { n, failed }] of byApp) {
      if (n < 300) continue;
      const [lo, hi] = catalogue.get(name)!.failRange;
      const rate = failed / n;
      const slack = 3.5 * Math.sqrt((hi * (1 - hi)) / n) + 0.005;
      expect({ name, ok: rate >= lo - slack && rate <= hi + slack, rate, lo, hi }).toMatchObject({ name, ok: true });
      checked++;
    }
    expect(checked).toBeGreaterThan(15);
    // The broken apps are visibly broken.
    const worst = [...catalogue.values()].filter((a) => a.failRange[0] >= 0.2).map((a) => a.name);
    expect(worst.length).toBeGreaterThanOrEqual(3);
    const frigate = byApp.get("frigate")!;
    expect(frigate.failed / frigate.n).toBeGreaterThan(0.15);
  });

  test("failed installs carry real-looking error texts, normalized (IPs masked), grouping into signatures", async () => {
    const failed = sample.filter((r) => finalOutcome(r) === "failed");
    const texts = new Set<string>();
    const signatures = new Set<string>();
    let masked = 0;
    for (const r of failed) {
      const error = r.update!.error;
      expect(error).not.toBeNull();
      expect(error!.length).toBeGreaterThan(0);
      expect(error).not.toMatch(/\u001b/); // colours stripped by the normalizer
      expect(error).not.toMatch(/(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.]*\d)/); // no raw IPv4
      if (/<ipv[46]>/.test(error!)) masked++;
      texts.add(error!);
      signatures.add(errorSignature(error)!);
    }
    expect(masked).toBeGreaterThan(10);
    // Volatile parts (CT ids, line numbers, paths, addresses) vary; signatures collapse them.
    expect(texts.size).toBeGreaterThan(signatures.size * 2);
    const all = [...texts].join("\n");
    for (const needle of ["exit code", "E: Unable to locate package", "Could not resolve host", "unable to create CT", "TERMINATED", "No error message", "wget https://github.com/"]) {
      expect(all).toContain(needle);
    }
    for (const r of sample.filter((x) => finalOutcome(x) === "aborted")) {
      expect(r.update!.status).toBe("failed");
      expect(["INTERRUPTED", "exit code 130: Script terminated by Ctrl+C"]).toContain(r.update!.error!);
    }
    for (const r of sample.filter((x) => finalOutcome(x) === "success")) {
      expect([null, "", "none", "No error message"]).toContain(r.update!.error);
    }
  });

  test("durations: per-app log-normal medians of 1-10 minutes with a long tail", async () => {
    const ms = sample.filter((r) => r.update).map((r) => r.updateAt! - r.at).sort((a, b) => a - b);
    expect(ms[0]!).toBeGreaterThanOrEqual(4000);
    expect(ms[ms.length - 1]!).toBeLessThanOrEqual(10 * 3_600_000);
    const median = quantile(ms, 0.5);
    expect(median).toBeGreaterThan(60_000);
    expect(median).toBeLessThan(600_000);
    expect(quantile(ms, 0.999)).toBeGreaterThan(median * 8); // the tail reaches hours
    // Successful installs of an app centre on its configured median.
    const byApp = new Map<string, number[]>();
    for (const r of sample) {
      if (finalOutcome(r) !== "success") continue;
      const list = byApp.get(r.report.fields!.nsapp!) ?? [];
      list.push(r.updateAt! - r.at);
      byApp.set(r.report.fields!.nsapp!, list);
    }
    let checked = 0;
    for (const [name, list] of byApp) {
      if (list.length < 400) continue;
      const observed = quantile(list.sort((a, b) => a - b), 0.5) / 1000;
      const configured = catalogue.get(name)!.medianS;
      expect({ name, ratio: observed / configured > 0.8 && observed / configured < 1.25 }).toEqual({ name, ratio: true });
      checked++;
    }
    expect(checked).toBeGreaterThan(10);
  });

  test("fields look like real clients: VMs, containers, host scripts, OS and host versions", async () => {
    for (const r of sample) {
      const s = r.report.fields!;
      if (s.type === "vm") {
        expect(s.ctType).toBe(2);
        expect(s.disableip6).toBe(""); // the VM client sends it empty
        expect(s.diskSize!).toBeGreaterThanOrEqual(8);
      } else if (s.type === "lxc" || s.type === "turnkey") {
        expect([0, 1]).toContain(s.ctType!);
        expect(s.diskSize!).toBeGreaterThanOrEqual(2);
        expect(s.diskSize!).toBeLessThanOrEqual(64);
        expect(s.coreCount!).toBeGreaterThanOrEqual(1);
        expect(s.coreCount!).toBeLessThanOrEqual(8);
        expect(s.ramSize!).toBeGreaterThanOrEqual(512);
        expect(s.ramSize!).toBeLessThanOrEqual(16384);
        expect([null, "yes", "no"]).toContain(s.disableip6);
      } else {
        expect(s.ctType).toBeNull();
        expect(s.diskSize).toBeNull();
      }
      expect(s.pveVersion).toMatch(/^(7\.4-\d+|8\.[0-4]\.\d+|9\.[01]\.\d+|not found)$/);
      expect(s.osType).not.toBeNull();
      expect(s.method).not.toBeNull();
    }
    const byType = countBy(sample, (r) => r.report.fields!.type);
    expect(byType.get("lxc")! / SAMPLE).toBeGreaterThan(0.75);
    expect(byType.get("vm")! / SAMPLE).toBeGreaterThan(0.02);
    const os = countBy(sample, (r) => r.report.fields!.osType!);
    expect(os.get("debian")! / SAMPLE).toBeGreaterThan(0.5);
    for (const t of ["ubuntu", "alpine", "fedora"]) expect(os.get(t) ?? 0).toBeGreaterThan(0);
    const methods = countBy(sample, (r) => r.report.fields!.method!);
    expect(methods.get("default")! / SAMPLE).toBeGreaterThan(0.5);
    expect(methods.get("advanced")! / SAMPLE).toBeGreaterThan(0.1);
    expect(sample.filter((r) => r.report.fields!.pveVersion === "not found").length).toBeGreaterThan(0);
    // Adoption moves: PVE 9 and Debian 13 grow over the year.
    const share = (list: SeedInstall[], f: (r: SeedInstall) => boolean) => list.filter(f).length / list.length;
    const early = sample.filter((r) => r.at < END - 320 * DAY);
    const late = sample.filter((r) => r.at >= END - 45 * DAY);
    const pve9 = (r: SeedInstall) => r.report.fields!.pveVersion!.startsWith("9.");
    expect(share(early, pve9)).toBeLessThan(0.1);
    expect(share(late, pve9)).toBeGreaterThan(0.5);
    const deb13 = (r: SeedInstall) => r.report.fields!.osType === "debian" && r.report.fields!.osVersion === "13";
    expect(share(late, deb13)).toBeGreaterThan(share(early, deb13) + 0.2);
  });
});

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
    const result = (await seedDatabase(spy, options, (p) => {
      expect(p.total).toBe(20_000);
      progress.push(p.written);
    }));
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
    const stored = sqlite.query("SELECT outcome, count(*) AS n FROM executions GROUP BY outcome").all() as { outcome: string; n: number }[];
    expect(new Map(stored.map((s) => [s.outcome, s.n]))).toEqual(expected);
    const span = sqlite.query("SELECT min(created_at) AS lo, max(updated_at) AS hi, min(duration_ms) AS d FROM executions").get() as { lo: number; hi: number; d: number };
    expect(span.lo).toBeGreaterThanOrEqual(END - 30 * DAY);
    expect(span.hi).toBeLessThanOrEqual(END);
    expect(span.d).toBeGreaterThanOrEqual(4000);
    expect(sqlite.query("SELECT count(*) AS n FROM executions WHERE outcome != 'in_progress' AND duration_ms IS NULL").get()).toEqual({ n: 0 });
    // Nothing was held, conflicting or rejected; rollups and signatures were kept.
    expect(sqlite.query("SELECT count(*) AS n FROM held_reports").get()).toEqual({ n: 0 });
    expect(sqlite.query("SELECT count(*) AS n FROM rejected_reports").get()).toEqual({ n: 0 });
    expect((sqlite.query("SELECT count(*) AS n FROM rollups").get() as { n: number }).n).toBeGreaterThan(30);
    expect((sqlite.query("SELECT count(*) AS n FROM error_signatures").get() as { n: number }).n).toBeGreaterThan(50);
    const failed = sqlite.query("SELECT error FROM executions WHERE outcome = 'failed'").all() as { error: string | null }[];
    expect(failed.every((f) => f.error !== null && f.error !== "")).toBe(true);
    store.close();
  }, 60_000); // generous for a loaded machine

  test("refuses to seed the same seed and window twice; another seed or window adds to the database", async () => {
    const { sqlite, store } = memoryStore();
    (await seedDatabase(store, small(300)));
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
    written = await seedDatabase(store, seedOptions({ records: 24_000, days: 365, end: END_TODAY, seed: 9, profile: "today" }));
  });

  test("every install written through the reports its client sends: more reports than installs, more executions (retries) than installs", async () => {
    expect(written.records).toBe(24_000);
    expect(written.writes).toBeGreaterThan(24_000 * 2.5);
    const { n, installs } = one<{ n: number; installs: number }>("SELECT count(*) AS n, count(DISTINCT random_id) AS installs FROM executions");
    expect(installs).toBe(24_000);
    expect(n / installs).toBeGreaterThan(1.02);
    // Retries are later attempts of the same install, each its own execution.
    const retries = one<{ n: number }>("SELECT count(*) AS n FROM executions WHERE attempt > 1").n;
    expect(retries).toBe(n - installs);
    expect(one<{ n: number }>("SELECT count(*) AS n FROM executions WHERE attempt > 1 AND outcome = 'success'").n).toBeGreaterThan(0); // rescued
    // Nothing held, refused or logged: the clients' reports are well-formed and in order.
    expect(one<{ n: number }>("SELECT count(*) AS n FROM held_reports").n).toBe(0);
    expect(one<{ n: number }>("SELECT count(*) AS n FROM rejected_reports").n).toBe(0);
    // Every instant a whole millisecond.
    expect(one<{ n: number }>("SELECT count(*) AS n FROM executions WHERE typeof(created_at) != 'integer' OR typeof(updated_in) != 'integer' OR typeof(validation_in) NOT IN ('integer', 'null') OR typeof(configuring_in) NOT IN ('integer', 'null')").n).toBe(0);
    const check = await verifyRollups(store);
    expect({ ok: check.ok, mismatches: check.mismatches, gaps: check.signatureGaps }).toEqual({ ok: true, mismatches: [], gaps: 0 });
  });

  test("the older part of the window is /upload only; then /telemetry v1, then v2 as well", () => {
    const client = (from: number, to: number) =>
      new Map(rows<{ v: number | null; n: number }>("SELECT payload_version AS v, count(*) AS n FROM executions WHERE created_at >= ? AND created_at < ? GROUP BY 1", from, to).map((r) => [r.v, r.n]));
    const oldest = client(END_TODAY - 365 * DAY, END_TODAY - 300 * DAY);
    expect([...oldest.keys()]).toEqual([null]);
    const middle = client(END_TODAY - 250 * DAY, END_TODAY - 150 * DAY);
    expect(middle.get(1)!).toBeGreaterThan(middle.get(null)!);
    expect(middle.has(2)).toBe(false);
    const newest = client(END_TODAY - 30 * DAY, END_TODAY);
    expect(newest.get(2)!).toBeGreaterThan(newest.get(1)!);
    expect(newest.get(null)!).toBeGreaterThan(0); // old hosts still send /upload
  });

  test("runs: progress pings, outcomes, exit codes and categories, declines and aborts as each client sends them", () => {
    expect(one<{ n: number }>("SELECT count(*) AS n FROM executions WHERE payload_version IS NOT NULL AND type != 'vm' AND kind = 'install' AND validation_at IS NOT NULL AND configuring_at IS NOT NULL").n).toBeGreaterThan(5000);
    const outcomes = new Map(rows<{ o: string; n: number }>("SELECT outcome AS o, count(*) AS n FROM executions GROUP BY 1").map((r) => [r.o, r.n]));
    // Runs that never end are expired 12 h after their start, as the stuck-install job does: unknown.
    for (const o of ["success", "failed", "aborted", "unknown"]) expect(outcomes.get(o) ?? 0).toBeGreaterThan(0);
    const categories = rows<{ c: string }>("SELECT DISTINCT error_category AS c FROM executions WHERE payload_version IS NOT NULL AND error_category IS NOT NULL").map((r) => r.c);
    for (const c of ["dependency", "network", "shell", "user_aborted", "timeout", "storage", "service"]) expect(categories).toContain(c);
    // A user's decline: a failure from v1 and older v2 engines, an abort from the newest.
    const declines = rows<{ v: number; status: string; cat: string }>("SELECT payload_version AS v, status, error_category AS cat FROM executions WHERE exit_code IN (113, 114, 122, 253, 254) AND payload_version IS NOT NULL");
    expect(declines.some((d) => d.v === 1 && d.status === "failed")).toBe(true);
    expect(declines.some((d) => d.v === 2 && d.status === "aborted" && d.cat === "user_aborted")).toBe(true);
    expect(declines.some((d) => d.v === 2 && d.status === "failed")).toBe(true);
    // The client's error text: its header line, the failing command, the log tail.
    const failure = one<{ error: string; cmd: string | null }>("SELECT error, failed_command AS cmd FROM executions WHERE payload_version = 2 AND outcome = 'failed' AND failed_command IS NOT NULL LIMIT 1");
    expect(failure.error).toMatch(/^exit_code=\d+ \| .+ \| at line \d+: .+\n---\n/);
    // Tools and addons: one report each, final at once.
    const shots = rows<{ kind: string; n: number; pinged: number }>("SELECT kind, count(*) AS n, sum(validation_at IS NOT NULL) AS pinged FROM executions WHERE payload_version IS NOT NULL AND kind != 'install' GROUP BY 1");
    expect(shots.map((s) => s.kind).sort()).toEqual(["addon", "tool"]);
    for (const s of shots) expect({ kind: s.kind, pinged: s.pinged }).toEqual({ kind: s.kind, pinged: 0 });
  });

  test("hosts: hardware, both meanings of gpu_passthrough, platforms, kernels, repos and forks, app versions", () => {
    const values = (column: string, where = "payload_version IS NOT NULL") => rows<{ v: string }>(`SELECT DISTINCT ${column} AS v FROM executions WHERE ${where}`).map((r) => r.v);
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
      const r = one<{ failed: number; n: number }>(`SELECT sum(outcome = 'failed') AS failed, count(*) AS n FROM executions WHERE payload_version IS NOT NULL AND outcome IN ('success', 'failed') AND ${where}`);
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
      expect({ driver, n: d.n > 0, stands: d.rate > 3 * r.rate && d.rate > 0.3 }).toEqual({ driver, n: true, stands: true });
    }
  });
});
