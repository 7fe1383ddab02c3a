// What one alert evaluation round costs, on seeded data: every rule kind of docs/alerts.example.toml
// (each-app rules with baselines and 30-day lookbacks included), next to the dashboard's own
// 30-day summary read in the same run as the baseline. A round runs every minute by default, on
// the thread that acknowledges reports (SQLite), so it must stay small.
//
//   bun scripts/bench-alerts.ts [--records 300000] [--runs 10] [--dir <dir>]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parseAlerts } from "../src/alerts/rules.ts";
import { seedDatabase, seedOptions } from "../src/seed/seed.ts";
import { openSqliteEngine } from "../src/store/sqlite/engine.ts";
import { createStats } from "../src/read/stats.ts";
import { benchRuntime } from "./bench/runtime.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    records: { type: "string", default: "300000" },
    runs: { type: "string", default: "10" },
    dir: { type: "string" },
  },
});
const records = Number(values.records);
const runs = Number(values.runs);
const dir = values.dir ?? mkdtempSync(join(tmpdir(), "installstats-bench-alerts-"));
const DAY = 86_400_000;

const env = {
  NTFY_TOKEN: "x",
  GOTIFY_APP_TOKEN: "x",
  DISCORD_WEBHOOK_URL: "http://127.0.0.1:9/d",
  SLACK_WEBHOOK_URL: "http://127.0.0.1:9/s",
  HOOK_TOKEN: "x",
  SMTP_PASSWORD: "x",
};
const alerts = parseAlerts(
  "docs/alerts.example.toml",
  await Bun.file(new URL("../docs/alerts.example.toml", import.meta.url)).text(),
  env,
);

const engine = openSqliteEngine(join(dir, "bench.db"), { durability: "normal", migrate: true });
const seeded = await seedDatabase(engine.store, seedOptions({ records }));
const clock = () => Date.now();
const runtime = await benchRuntime(engine, join(dir, "bench.db"), clock, alerts);
const stats = createStats(runtime.store);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

const baseline: number[] = [];
const rounds: number[] = [];
await runtime.alerts!.evaluate(); // first round: cells parsed into the cache, as on a running server
for (let i = 0; i < runs; i++) {
  const now = clock();
  baseline.push(await timed(() => stats.summary({ kind: "install" }, { from: now - 30 * DAY, to: now })));
  rounds.push(await timed(() => runtime.alerts!.evaluate()));
}
const r = median(rounds);
const b = median(baseline);
console.log(
  JSON.stringify({
    records: seeded.records,
    rules: alerts.rules.length,
    round_ms_median: Number(r.toFixed(1)),
    summary_30d_ms_median: Number(b.toFixed(2)),
    ratio_round_to_summary: Number((r / b).toFixed(1)),
    share_of_a_minute: `${((r / 60_000) * 100).toFixed(3)}%`,
  }),
);
await runtime.stop();
if (!values.dir) rmSync(dir, { recursive: true, force: true });
