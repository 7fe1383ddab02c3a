// `installstats seed`: the synthetic data generator (distributions, determinism); writing through
// the store: test/sqlite/seed-writes-through-the-store.test.ts.
import { beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { errorSignature } from "../../src/domain/error-signature.ts";
import { generateInstalls, seedOptions, type SeedInstall, type SeedOptions } from "../../src/seed/seed.ts";
import { Rng, buildCatalogue, uuid4, type AppSpec } from "../../src/seed/seed-data.ts";

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
    for (const needle of [
      "exit code",
      "E: Unable to locate package",
      "Could not resolve host",
      "unable to create CT",
      "No error message",
      "wget https://github.com/",
    ]) {
      expect(all).toContain(needle);
    }
    for (const r of sample.filter((x) => finalOutcome(x) === "aborted")) {
      expect(r.update!.status).toBe("failed");
      // Ctrl-C, and SIGTERM's TERMINATED (143), which the community reads as the user's abort too.
      expect(["INTERRUPTED", "exit code 130: Script terminated by Ctrl+C", "TERMINATED"]).toContain(r.update!.error!);
    }
    for (const r of sample.filter((x) => finalOutcome(x) === "success")) {
      expect([null, "", "none", "No error message"]).toContain(r.update!.error);
    }
  });

  test("durations: per-app log-normal medians of 1-10 minutes with a long tail", async () => {
    const ms = sample
      .filter((r) => r.update)
      .map((r) => r.updateAt! - r.at)
      .sort((a, b) => a - b);
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
      const observed =
        quantile(
          list.sort((a, b) => a - b),
          0.5,
        ) / 1000;
      const configured = catalogue.get(name)!.medianS;
      expect({ name, ratio: observed / configured > 0.8 && observed / configured < 1.25 }).toEqual({
        name,
        ratio: true,
      });
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
