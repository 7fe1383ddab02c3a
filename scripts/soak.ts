// Soak test (not in the default suite): holds a steady ingest load on the compiled binary for a
// while and reports throughput, latency percentiles, memory over time and reports lost (must be 0).
//
//   bun scripts/soak.ts [--duration 600] [--rate 500] [--connections 32] [--durability full]
//
// Traffic goes to 127.0.0.1 only; the run is bounded by --duration and stops by itself.
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    duration: { type: "string", default: "600" },
    rate: { type: "string", default: "500" },
    connections: { type: "string", default: "32" },
    durability: { type: "string", default: "full" },
  },
});
const durationS = Number(values.duration);
const rate = Number(values.rate); // start reports per second; each is followed by its status update
const connections = Number(values.connections);

const dir = mkdtempSync(join(tmpdir(), "installstats-soak-"));
const bin = join(dir, "installstats");
const db = join(dir, "soak.db");
const root = new URL("..", import.meta.url).pathname;
if (
  Bun.spawnSync(["bun", "scripts/build.ts", "--outfile", bin], { cwd: root, stdout: "inherit", stderr: "inherit" })
    .exitCode !== 0
)
  process.exit(1);

const server = Bun.spawn(
  [bin, "serve", "--host", "127.0.0.1", "--port", "0", "--db", db, "--durability", String(values.durability)],
  { stdout: "pipe", stderr: "ignore" },
);
const reader = server.stdout.getReader();
let banner = "";
while (!/listening on (\S+)/.test(banner)) {
  const { value, done } = await reader.read();
  if (done) throw new Error("server did not start");
  banner += new TextDecoder().decode(value);
}
const url = /listening on (\S+)/.exec(banner)![1]!;

const latencies: number[] = [];
const acked = new Set<string>();
const finished = new Set<string>();
const memory: { t: number; rssMb: number }[] = [];
let errors = 0;
let sent = 0;
const started = performance.now();
const deadline = started + durationS * 1000;

const rss = () => {
  const status = readFileSync(`/proc/${server.pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
};
const sampler = setInterval(
  () => memory.push({ t: Math.round((performance.now() - started) / 1000), rssMb: Math.round(rss()) }),
  1000,
);

async function post(path: string, body: object): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  latencies.push(performance.now() - t0);
  return res.status;
}

/** Each connection paces itself to rate/connections installs per second. */
async function client(c: number) {
  const interval = (1000 * connections) / rate;
  let next = performance.now();
  for (let i = 0; performance.now() < deadline; i++) {
    const id = `soak-${c}-${i}`;
    sent++;
    try {
      const s1 = await post("/upload", {
        ct_type: 1,
        type: "lxc",
        disk_size: 8,
        core_count: 2,
        ram_size: 2048,
        os_type: "debian",
        os_version: "12",
        nsapp: `app-${i % 40}`,
        method: "default",
        pve_version: "8.2.2",
        status: "installing",
        random_id: id,
      });
      if (s1 === 201) acked.add(id);
      const s2 = await post("/upload/updatestatus", {
        status: i % 9 ? "done" : "failed",
        error: i % 9 ? "none" : `exit code ${i % 5}`,
        random_id: id,
      });
      if (s2 === 200) finished.add(id);
      if (s1 >= 300 || s2 >= 300) errors++;
    } catch {
      errors++;
    }
    next += interval;
    const wait = next - performance.now();
    if (wait > 0) await Bun.sleep(wait);
  }
}

await Promise.all(Array.from({ length: connections }, (_, c) => client(c)));
clearInterval(sampler);
const elapsed = (performance.now() - started) / 1000;
server.kill("SIGTERM");
await server.exited;

const check = new Database(db, { readonly: true });
const stored = new Map(
  (check.query("SELECT random_id, outcome FROM executions").all() as { random_id: string; outcome: string }[]).map(
    (r) => [r.random_id, r.outcome],
  ),
);
check.close();
const lost =
  [...acked].filter((id) => !stored.has(id)).length +
  [...finished].filter((id) => stored.get(id) === "in_progress").length;

latencies.sort((a, b) => a - b);
const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]?.toFixed(2);
const rssValues = memory.map((m) => m.rssMb);
console.log(`
## Soak: ${durationS} s at ${rate} installs/s (${connections} connections, durability ${values.durability})

| measure | value |
|---|---|
| installs sent / acknowledged / finished | ${sent} / ${acked.size} / ${finished.size} |
| requests per second | ${(latencies.length / elapsed).toFixed(0)} |
| latency p50 / p95 / p99 / max (ms) | ${pct(0.5)} / ${pct(0.95)} / ${pct(0.99)} / ${latencies.at(-1)?.toFixed(1)} |
| errors (non-2xx or failed requests) | ${errors} |
| server RSS MB: first / min / max / last | ${rssValues[0]} / ${Math.min(...rssValues)} / ${Math.max(...rssValues)} / ${rssValues.at(-1)} |
| **reports lost** | **${lost}** |

RSS every ${Math.max(1, Math.floor(memory.length / 20))} s: ${memory
  .filter((_, i) => i % Math.max(1, Math.floor(memory.length / 20)) === 0)
  .map((m) => `${m.t}s=${m.rssMb}`)
  .join(" ")}
`);
rmSync(dir, { recursive: true, force: true });
process.exit(lost === 0 ? 0 : 1);
