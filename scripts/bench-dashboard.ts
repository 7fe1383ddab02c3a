// Dashboard benchmark: how long the first view takes to become interactive in real headless
// Chromium, against the compiled binary on a large database, next to the same page on an empty
// database measured in the same run (the page's own cost without data).
//
//   bun scripts/bench-dashboard.ts [--records 10000000] [--dir /tmp/installstats-bench] [--runs 7] [--bin dist/installstats]
//
// "Interactive" is the page's own mark `installstats:ready`: every number and chart of the view is
// drawn and its controls respond (navigation start = 0). Each run uses a fresh browser context,
// so nothing is cached. The database is seeded once (same data as bench-report) and reused.
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Browser } from "playwright-core";
import { compiledBinary, startServer } from "../test/helpers/binary.ts";
import { tempDir } from "../test/helpers/tmp.ts";
import { launchBrowser, openView } from "../test/helpers/browser.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    records: { type: "string", default: "10000000" },
    dir: { type: "string", default: "/tmp/installstats-bench" },
    runs: { type: "string", default: "7" },
    bin: { type: "string" },
  },
});
const records = Number(values.records);
const runs = Number(values.runs);
mkdirSync(values.dir!, { recursive: true });
const bin = values.bin ?? (await compiledBinary());

const dbPath = join(values.dir!, `seed-${records}.db`);
const have = existsSync(dbPath)
  ? (new Database(dbPath, { readonly: true }).query("SELECT count(*) AS n FROM executions").get() as { n: number }).n
  : 0;
if (have === 0) {
  console.error(`seeding ${records.toLocaleString()} records into ${dbPath} (10M takes ~20 min) ...`);
  const seeded = Bun.spawnSync([bin, "seed", "--records", String(records), "--db", dbPath], { stderr: "inherit" });
  if (seeded.exitCode !== 0) throw new Error("seed failed");
} else if (have !== records) console.error(`note: ${dbPath} holds ${have} records, not ${records}`);

interface Load {
  ready: number;
  /** The slowest API request of the load, path and ms. */
  slowest: [string, number];
}

async function load(browser: Browser, url: string): Promise<Load> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  await openView(page, url);
  const result = await page.evaluate(() => {
    const ready = performance.getEntriesByName("installstats:ready")[0]!.startTime;
    const apis = (performance.getEntriesByType("resource") as PerformanceResourceTiming[]).filter((e) =>
      e.name.includes("/api/"),
    );
    const slowest = apis.reduce((a, b) => (b.duration > a.duration ? b : a), apis[0]!);
    return {
      ready,
      slowest: [new URL(slowest.name).pathname + new URL(slowest.name).search, slowest.duration] as [string, number],
    };
  });
  await ctx.close();
  return result;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const VIEWS: [string, string][] = [
  ["Overview (first view, 30 days)", "/"],
  ["Overview, 365 days", "/?days=365"],
  ["Failures, 30 days", "/failures"],
  ["Install log", "/installs"],
  ["App page (top app), 30 days", "/app?nsapp=docker"],
  // Two dimension filters: some of these aggregates are answered by scanning the window.
  ["Overview filtered by type=vm, 30 days", "/?type=vm"],
];

async function measure(db: string): Promise<{ cold: Load; loads: Map<string, Load[]> }> {
  const server = await startServer(bin, ["--db", db]);
  const browser = await launchBrowser();
  const out = new Map<string, Load[]>();
  let cold: Load;
  try {
    // The first load after start-up, reported apart: the server's first queries fill its caches.
    cold = await load(browser, server.url + "/");
    for (const [name, path] of VIEWS) {
      const loads: Load[] = [];
      for (let i = 0; i < runs; i++) loads.push(await load(browser, server.url + path));
      out.set(name, loads);
    }
  } finally {
    await browser.close();
    await server.stop();
  }
  return { cold, loads: out };
}

const emptyRun = await measure(join(tempDir("installstats-bench-dash-"), "empty.db"));
const fullRun = await measure(dbPath);
const empty = emptyRun.loads;
const full = fullRun.loads;

const lines = [
  `# installstats dashboard benchmark`,
  ``,
  `Command: \`bun scripts/bench-dashboard.ts --records ${records} --runs ${runs}\`  `,
  `Machine: ${cpus().length} cores, ${cpus()[0]?.model ?? "?"}; ${new Date().toISOString()}; headless Chromium, fresh context per load.`,
  ``,
  `| view | ${records.toLocaleString("en-US")} records: interactive, median (max) | empty database: median | ratio | slowest API call at ${records.toLocaleString("en-US")} (median run) |`,
  `|---|---|---|---|---|`,
];
for (const [name] of VIEWS) {
  const f = full.get(name)!;
  const e = empty.get(name)!;
  const fr = median(f.map((l) => l.ready));
  const er = median(e.map((l) => l.ready));
  const mid = [...f].sort((a, b) => a.ready - b.ready)[Math.floor(f.length / 2)]!;
  lines.push(
    `| ${name} | ${fr.toFixed(0)} ms (${Math.max(...f.map((l) => l.ready)).toFixed(0)} ms) | ${er.toFixed(0)} ms | ${(fr / er).toFixed(2)}x | \`${mid.slowest[0]}\` ${mid.slowest[1].toFixed(0)} ms |`,
  );
}
const first = median(full.get(VIEWS[0]![0])!.map((l) => l.ready));
lines.push(
  "",
  `First view interactive at ${records.toLocaleString("en-US")} records: ${first.toFixed(0)} ms median (target < 1500 ms: ${first < 1500 ? "met" : "MISSED"}); ` +
    `the very first load after the server started: ${fullRun.cold.ready.toFixed(0)} ms (empty database: ${emptyRun.cold.ready.toFixed(0)} ms).`,
);
const report = lines.join("\n");
console.log(report);
mkdirSync("bench-results", { recursive: true });
const file = join("bench-results", `dashboard-${new Date().toISOString().replace(/[:.]/g, "-")}.md`);
writeFileSync(file, report + "\n");
console.error(`written to ${file}`);
