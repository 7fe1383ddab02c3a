// Do heavy reads stall ingestion? Seeds a database, starts the server, and measures start-report
// latency from one steady client twice in the same run: alone (baseline), and while four clients
// loop the heaviest reads. Prints both, their ratio, and what the reads took.
//
//   bun scripts/bench-read-isolation.ts [--records 300000] [--seconds 10] [--rate 50] [--bin dist/installstats]
//
// Ratios within one run are the result; absolute numbers depend on the machine and what else runs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    records: { type: "string", default: "300000" },
    seconds: { type: "string", default: "10" },
    rate: { type: "string", default: "50" },
    bin: { type: "string" },
    readers: { type: "string", default: "4" },
  },
});
const RECORDS = Number(values.records);
const SECONDS = Number(values.seconds);
const RATE = Number(values.rate);
const READERS = Number(values.readers);
const command = values.bin ? [values.bin] : ["bun", "run", join(import.meta.dir, "..", "src", "main.ts")];

/** The reads that scan records rather than rollups: text search, filters rollups do not cover, exports, exact error texts. */
const HEAVY = [
  "/api/stats/errors?days=365&q=e",
  "/api/installs?days=365&q=e&limit=500",
  "/api/stats/summary?days=365&q=a",
  "/api/stats/breakdown?by=nsapp&days=365&q=e",
  "/api/export?format=ndjson&days=30",
  "/data/errors",
  "/api/stats/timeseries?days=365&q=e",
];

const dir = mkdtempSync(join(tmpdir(), "installstats-read-isolation-"));
const db = join(dir, "bench.db");
try {
  console.log(`seeding ${RECORDS.toLocaleString()} records...`);
  const seeded = Bun.spawnSync([...command, "seed", "--db", db, "--records", String(RECORDS), "--days", "365"], {
    stdout: "ignore",
    stderr: "pipe",
  });
  if (seeded.exitCode !== 0) throw new Error(`seed failed: ${seeded.stderr.toString()}`);

  const server = Bun.spawn([...command, "serve", "--db", db, "--host", "127.0.0.1", "--port", "0"], {
    stdout: "pipe",
    stderr: "ignore",
  });
  const reader = server.stdout.getReader();
  let out = "";
  while (!/listening on (http:\/\/\S+)/.test(out)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`server exited: ${out}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;

  let n = 0;
  /** One client sending start reports at a steady rate; latency of each. */
  async function ingest(seconds: number): Promise<number[]> {
    const latencies: number[] = [];
    const end = performance.now() + seconds * 1000;
    const gap = 1000 / RATE;
    let next = performance.now();
    const pending: Promise<void>[] = [];
    while (performance.now() < end) {
      const id = `iso-${process.pid}-${n++}`;
      const body = JSON.stringify({
        random_id: id,
        type: "lxc",
        nsapp: "bench",
        status: "installing",
        ct_type: 1,
        disk_size: 4,
        core_count: 1,
        ram_size: 512,
        os_type: "debian",
        os_version: "12",
      });
      const began = performance.now();
      pending.push(
        fetch(`${url}/upload`, { method: "POST", body, headers: { "content-type": "application/json" } }).then(
          async (r) => {
            await r.arrayBuffer();
            if (r.status !== 201) throw new Error(`report answered ${r.status}`);
            latencies.push(performance.now() - began);
          },
        ),
      );
      next += gap;
      await Bun.sleep(Math.max(0, next - performance.now()));
    }
    await Promise.all(pending);
    return latencies;
  }

  const reads: { path: string; ms: number; status: number }[] = [];
  let reading = false;
  async function readLoop(k: number): Promise<void> {
    for (let i = k; reading; i++) {
      const path = HEAVY[i % HEAVY.length]!;
      const began = performance.now();
      const res = await fetch(`${url}${path}`);
      await res.arrayBuffer();
      reads.push({ path, ms: performance.now() - began, status: res.status });
    }
  }

  const pct = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
  };
  const line = (name: string, xs: number[]) =>
    `${name.padEnd(22)} n=${String(xs.length).padStart(5)}  p50 ${pct(xs, 50).toFixed(1).padStart(7)} ms  p99 ${pct(xs, 99).toFixed(1).padStart(8)} ms  max ${Math.max(
      ...xs,
    )
      .toFixed(1)
      .padStart(8)} ms`;

  await ingest(2); // warm-up
  const alone = await ingest(SECONDS);
  reading = true;
  const loops = Array.from({ length: READERS }, (_, k) => readLoop(k));
  await Bun.sleep(500);
  const withReads = await ingest(SECONDS);
  reading = false;
  await Promise.all(loops);

  console.log(
    `\n${RECORDS.toLocaleString()} records, ${RATE} start reports/s, ${READERS} readers looping ${HEAVY.length} heavy reads`,
  );
  console.log(line("ingestion alone", alone));
  console.log(line("ingestion with reads", withReads));
  console.log(
    `ratio (with reads / alone): p50 x${(pct(withReads, 50) / pct(alone, 50)).toFixed(1)}, p99 x${(pct(withReads, 99) / pct(alone, 99)).toFixed(1)}`,
  );
  const byPath = new Map<string, { ms: number[]; statuses: Set<number> }>();
  for (const r of reads) {
    const e = byPath.get(r.path) ?? { ms: [], statuses: new Set() };
    e.ms.push(r.ms);
    e.statuses.add(r.status);
    byPath.set(r.path, e);
  }
  console.log("\nreads while ingesting:");
  for (const [path, e] of byPath)
    console.log(`  ${line(path.slice(0, 44), e.ms)}  statuses ${[...e.statuses].join(",")}`);
  server.kill("SIGTERM");
  await server.exited;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
