// The SQLite write path's cost per start report without HTTP: bodies as the clients send them are
// taken in (src/ingest/pipeline.ts) and written to a fresh database with durability full, a batch of
// --batch at a time, as the group-commit writer hands them over. Prints the process's user and
// system CPU per report, each round and the median. Where the machine is shared, count instructions
// instead: they do not move with the load (cachegrind, Debian package valgrind; JavaScriptCore's
// concurrent JIT and GC off so that runs repeat; the difference of two runs is what the extra
// reports cost, start-up and warm-up cancel):
//
//   bun scripts/bench-write-path.ts [--reports 20000] [--warmup 5000] [--batch 64] [--rounds 5]
//   bun scripts/bench-write-path.ts --instructions   (runs itself twice under cachegrind, ~1 min:)
//   BUN_JSC_useConcurrentJIT=0 BUN_JSC_useConcurrentGC=0 valgrind --tool=cachegrind --cache-sim=no \
//     --cachegrind-out-file=/dev/null bun scripts/bench-write-path.ts --reports 10240 --warmup 2560 --rounds 1
//   (again with --reports 2560; instructions per report = the difference of "I refs" / 7680)
//
// Only files under the system's temporary directory, removed at the end.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { defaults } from "../src/config.ts";
import { intake } from "../src/ingest/pipeline.ts";
import type { WriteOp } from "../src/store/contract/store.ts";
import { openEngine } from "../src/store/open.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    reports: { type: "string", default: "20000" },
    warmup: { type: "string", default: "5000" },
    batch: { type: "string", default: "64" },
    rounds: { type: "string", default: "5" },
    instructions: { type: "boolean", default: false },
  },
});

if (values.instructions) {
  function missing(): never {
    console.error("bench-write-path: valgrind did not run (Debian: apt-get install -y valgrind)");
    process.exit(2);
  }
  const refs = (reports: number): number => {
    if (Bun.which("valgrind") === null) missing();
    const run = Bun.spawnSync(
      ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", process.execPath].concat([
        import.meta.path,
        "--reports",
        String(reports),
        "--warmup",
        "2560",
        "--rounds",
        "1",
      ]),
      { env: { ...process.env, BUN_JSC_useConcurrentJIT: "0", BUN_JSC_useConcurrentGC: "0" }, stdout: "ignore" },
    );
    const found = /I\s+refs:\s+([\d,]+)/.exec(run.stderr.toString());
    if (!run.success || !found) missing();
    return Number(found[1]!.replaceAll(",", ""));
  };
  const [more, fewer] = [refs(10_240), refs(2_560)];
  console.log(`${Math.round((more - fewer) / 7_680)} instructions per start report (${more} - ${fewer}, / 7680)`);
  process.exit(0);
}
const [reports, warmup, batch, rounds] = [values.reports, values.warmup, values.batch, values.rounds].map(Number);
if (![reports, warmup, batch, rounds].every((n) => Number.isSafeInteger(n) && n! >= 0) || batch! < 1) {
  console.error("bench-write-path: --reports, --warmup, --batch and --rounds take whole numbers (batch at least 1)");
  process.exit(2);
}

const APPS = Array.from({ length: 120 }, (_, i) => `app${i}`);
const OS = [
  ["debian", "12"],
  ["ubuntu", "24.04"],
  ["alpine", "3.20"],
] as const;
const encoder = new TextEncoder();
let seq = 0;
/** A start report as /upload receives it: a new install, its app skewed as real traffic is. */
function startReport(): WriteOp {
  const [osType, osVersion] = OS[seq++ % OS.length]!;
  const body = JSON.stringify({
    random_id: crypto.randomUUID(),
    type: "lxc",
    nsapp: APPS[Math.floor(Math.random() ** 2 * APPS.length)],
    status: "installing",
    disk_size: 8,
    core_count: 2,
    ram_size: 2048,
    os_type: osType,
    os_version: osVersion,
    disableip6: "yes",
    method: "default",
    pve_version: "8.2.4",
  });
  const taken = intake("upload", encoder.encode(body), Date.now(), defaults);
  if (!taken.ok) throw new Error(`bench-write-path: a generated report was refused: ${taken.rejection.message}`);
  return taken.op;
}

const dir = mkdtempSync(join(tmpdir(), "installstats-write-path-"));
const engine = await openEngine(join(dir, "bench.db"), { create: true, durability: "full", migrate: true });
try {
  const write = async (n: number) => {
    for (let done = 0; done < n; done += batch!) {
      const ops = Array.from({ length: Math.min(batch!, n - done) }, startReport);
      await engine.store.write(ops);
    }
  };
  await write(warmup!);
  const perReport: { user: number; system: number }[] = [];
  for (let r = 0; r < rounds!; r++) {
    const before = process.cpuUsage();
    await write(reports!);
    const used = process.cpuUsage(before);
    perReport.push({ user: used.user / reports!, system: used.system / reports! });
    console.log(
      `round ${r + 1}: user ${perReport[r]!.user.toFixed(2)} µs, system ${perReport[r]!.system.toFixed(2)} µs per report`,
    );
  }
  if (perReport.length > 0) {
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const user = median(perReport.map((p) => p.user));
    const system = median(perReport.map((p) => p.system));
    console.log(
      `median of ${rounds} rounds of ${reports} start reports, ${batch} a batch: user ${user.toFixed(2)} µs, system ${system.toFixed(2)} µs, together ${(user + system).toFixed(2)} µs per report`,
    );
  }
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}
// As the CLI's commands end (src/main.ts): exit once done, whatever handle a closed engine leaves.
process.exit(0);
