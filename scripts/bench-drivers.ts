// Failure drivers on a database of many dimension values: today's clients report kernels, app
// versions, forks and hardware, so a window's rollup cells hold hundreds of values per dimension,
// where `installstats seed` (the /upload era) gives a few. Loads (once) N executions over a year
// with such values, then measures p50/p95 of /api/stats/drivers next to /api/stats/summary (the
// same cells, one dimension) in the same run, 30 and 365 days, every app and the busiest one.
//
//   bun scripts/bench-drivers.ts [--records 1000000] [--dir /tmp/installstats-bench-drivers] [--runs 40]
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Execution } from "../src/domain/execution.ts";
import { DAY, HOUR } from "../src/domain/time.ts";
import { openEngine } from "../src/store/open.ts";
import type { WriteOp } from "../src/store/contract/store.ts";
import { execution } from "../test/helpers/reports.ts";
import { prng } from "../test/helpers/random.ts";
import { benchRuntime } from "./bench/runtime.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    records: { type: "string", default: "1000000" },
    dir: { type: "string", default: "/tmp/installstats-bench-drivers" },
    runs: { type: "string", default: "40" },
  },
});
const records = Number(values.records);
const runs = Number(values.runs);
mkdirSync(values.dir!, { recursive: true });
const file = join(values.dir!, `drivers-${records}.db`);
const fresh = !existsSync(file);
const engine = await openEngine(file, { durability: "normal", migrate: true, create: true });
const END = Date.UTC(2026, 10, 27);

if (fresh) {
  // Skewed choices (a few values carry most runs, a long tail the rest), as real fleets are.
  const rnd = prng(29);
  const skewed = (n: number) => Math.floor(rnd() ** 3 * n);
  const t0 = performance.now();
  const BATCH = 2000;
  for (let i = 0; i < records; i += BATCH) {
    const ops: WriteOp[] = [];
    for (let k = i; k < Math.min(records, i + BATCH); k++) {
      // In time order, so a batch touches few cells.
      const createdAt = END - 365 * DAY + Math.floor((k / records) * 365 * DAY);
      const app = skewed(400);
      const pve = skewed(60);
      const failed = rnd() < (pve === 7 ? 0.4 : 0.08);
      const id = `d${k}`;
      const e: Execution = execution(id, {
        payloadVersion: 2,
        nsapp: `app-${app}`,
        pveVersion: `9.0.${pve}`,
        kernelVersion: `6.14.${skewed(300)}-pve`,
        osType: "debian",
        osVersion: String(11 + skewed(4)),
        coreCount: 1 + skewed(16),
        ramSize: 512 * (1 + skewed(40)),
        method: ["default", "advanced", "mydefaults"][skewed(3)]!,
        cpuVendor: ["intel", "amd", "arm"][skewed(3)]!,
        gpuVendor: ["", "intel", "nvidia", "amd"][skewed(4)]! || null,
        gpuPassthrough: rnd() < 0.5 ? "yes" : "no",
        arch: rnd() < 0.97 ? "amd64" : "arm64",
        platform: rnd() < 0.95 ? "pve" : "incus",
        repoSource: rnd() < 0.9 ? "ProxmoxVE" : "external",
        repoSlug: `fork-${skewed(200)}/ProxmoxVE`,
        appVersion: `${1 + skewed(5)}.${skewed(60)}.0`,
        attempt: 1 + skewed(4),
        status: failed ? "failed" : "success",
        outcome: failed ? "failed" : "success",
        exitCode: failed ? 100 : 0,
        error: failed ? `exit_code=100 | APT failed ${skewed(50)}` : null,
        createdAt,
        updatedAt: createdAt + 60_000,
        durationMs: 60_000,
      });
      ops.push({ kind: "load", execution: e, at: createdAt });
    }
    await engine.store.write(ops);
    if (i % 100_000 === 0) process.stderr.write(`\r${i}/${records}`);
  }
  await engine.store.write([{ kind: "fold", until: END, at: END }]);
  console.error(`\nloaded ${records} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

const now = END - HOUR;
const runtime = await benchRuntime(engine, file, () => now);
const get = async (p: string) => {
  const res = await runtime.app.handle(new Request(`http://localhost${p}`));
  if (res.status !== 200) throw new Error(`${p}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
};
const pct = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
console.log(`| question | window | values compared | first ms | p50 ms | p95 ms |\n|---|---|---:|---:|---:|---:|`);
for (const days of [30, 365]) {
  for (const path of [
    `/api/stats/summary?days=${days}`,
    `/api/stats/drivers?days=${days}`,
    `/api/stats/summary?days=${days}&nsapp=app-0`,
    `/api/stats/drivers?days=${days}&nsapp=app-0`,
  ]) {
    const t0 = performance.now();
    const first = await get(path);
    const firstMs = performance.now() - t0;
    const lat: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      await get(path);
      lat.push(performance.now() - t);
    }
    console.log(
      `| ${path.replace(/\?.*/, "").replace("/api/stats/", "")}${path.includes("nsapp") ? " (one app)" : ""} | ${days} d | ${first.compared ?? "-"} | ${firstMs.toFixed(1)} | ${pct(lat, 0.5).toFixed(1)} | ${pct(lat, 0.95).toFixed(1)} |`,
    );
  }
}
await runtime.stop();
process.exit(0);
