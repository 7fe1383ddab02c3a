// CPU time of the community routes' answers computed afresh: what a dashboard user pays on
// changing a filter. /api/new reuses an answer per filter and window (and a costly one for a
// while after a write), so each request here is asked one hour later than the one before: a new
// window, every section computed again; stored cells stay decoded (their bytes did not change),
// as in a server that has answered other filters. Each path's first request also decodes them.
// The answers' hashes let two revisions be compared on the same database (same hashes: same answers).
// Before each request another connection writes (as bench-report.ts's "cold"): the store drops the
// sums of stored slices it kept and recounts its open hours. With --own-writes it does not: a
// server is its database's only writer, and its own reports leave stored cells and their sums be.
// With --ingest the server also stores a report of its own before each request (POST /telemetry),
// as under the clients' traffic: what it keeps while nothing changed is fetched again. With
// --same-hour (and --ingest) every request is asked within the same hour: a page reloaded after a
// report, the same window computed again. With --step <minutes> (and --ingest) each request is that
// long after the one before (60 without it): a page polled while reports arrive, an hour folded
// every 60/step requests and a day turned every 1440/step. With --each every request's CPU ms is printed (stderr), in
// order: the first is the path's first request, and a day turns every 24 requests.
//
//   bun scripts/bench-new-cold.ts --db <seeded database> [--runs 9] [--own-writes] [--ingest] [--same-hour | --step 5] [--each] [path ...]
import { Database } from "bun:sqlite";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { openSqliteEngine } from "../src/store/sqlite/engine.ts";
import { benchRuntime } from "./bench/runtime.ts";

const { values, positionals } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    db: { type: "string" },
    runs: { type: "string", default: "9" },
    "own-writes": { type: "boolean", default: false },
    ingest: { type: "boolean", default: false },
    "same-hour": { type: "boolean", default: false },
    step: { type: "string" },
    each: { type: "boolean", default: false },
  },
  allowPositionals: true,
});
if (values.db === undefined) throw new Error("--db <seeded database> is required (bun run seed --profile today ...)");
if ((values["same-hour"] || values.step !== undefined) && !values.ingest)
  throw new Error("--same-hour and --step need --ingest (else the answer is reused, not computed)");
const runs = Number(values.runs);
const HOUR = 3_600_000;
const step = values["same-hour"] ? 1000 : values.step === undefined ? HOUR : Number(values.step) * 60_000;
if (!(step > 0)) throw new Error(`--step ${values.step}: a number of minutes above 0`);

const engine = openSqliteEngine(values.db, { durability: "normal", migrate: true });
// A write from another connection: kept sums and open hours are recounted, as after any report.
const other = new Database(values.db);
const span = await engine.store.recordSpan();
if (span === null) throw new Error(`${values.db} holds no records: seed it first`);
let now = span.last;
const runtime = await benchRuntime(engine, values.db, () => now);
const topApp = await (async () => {
  const res = await runtime.app.handle(new Request("http://localhost/api/stats/breakdown?by=nsapp&days=30&limit=1"));
  return ((await res.json()) as { groups: { value: string }[] }).groups[0]!.value;
})();
const paths =
  positionals.length > 0
    ? positionals
    : [
        "/api/new?days=365",
        "/api/new?days=365&ctype=lxc",
        "/api/new?days=30&ctype=lxc",
        "/api/new?days=30&ctype=vm",
        "/api/new?days=365&platform=pve",
        "/api/new?days=30&platform=pve&ctype=lxc",
        "/api/new?days=7",
        `/api/script-detail?app=${topApp}&days=365`,
        `/api/script-detail?app=${topApp}&days=365&platform=pve`,
        "/api/stats/drivers?days=365",
      ];

const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(", ")}; ${runs} requests per path\n`,
);
console.log(
  "| path | first CPU ms | computed CPU p50 ms | computed CPU p95 ms | computed CPU max ms | answers (sha1, one per request) |",
);
console.log("|---|---:|---:|---:|---:|---|");
for (const path of paths) {
  const cpu: number[] = [];
  const hashes: string[] = [];
  for (let i = 0; i < runs; i++) {
    now = span.last + i * step;
    if (!values["own-writes"]) other.run("UPDATE rollup_state SET folded_until = folded_until");
    if (values.ingest) {
      const id = crypto.randomUUID();
      const sent = await runtime.app.handle(
        new Request("http://localhost/telemetry", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ random_id: id, execution_id: id, type: "lxc", nsapp: "debian", status: "installing" }),
        }),
      );
      if (sent.status >= 300) throw new Error(`POST /telemetry: ${sent.status} ${await sent.text()}`);
    }
    const c = process.cpuUsage();
    const res = await runtime.app.handle(new Request(`http://localhost${path}`));
    const body = await res.text();
    const d = process.cpuUsage(c);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body}`);
    cpu.push((d.user + d.system) / 1000);
    hashes.push(new Bun.CryptoHasher("sha1").update(body).digest("hex").slice(0, 6));
  }
  // On stderr: stdout stays one table.
  if (values.each) console.error(`${path}: ${cpu.map((x) => x.toFixed(0)).join(" ")}`);
  const rest = cpu.slice(1).sort((a, b) => a - b);
  console.log(
    `| \`${path}\` | ${fmt(cpu[0]!)} | ${fmt(rest[Math.floor(rest.length / 2)] ?? Number.NaN)} | ${fmt(rest[Math.ceil(rest.length * 0.95) - 1] ?? Number.NaN)} | ${fmt(rest.at(-1) ?? Number.NaN)} | ${hashes.join(" ")} |`,
  );
}
other.close();
process.exit(0);
