// Where a process's CPU goes beyond its JavaScript: Linux perf's software clock samples every
// thread (the allocator's, the JIT's, the collector's) and the kernel under it, which Bun's own
// profiler does not see. Used by bench-pg-profile.ts --perf; needs `perf` (Debian: linux-perf).
// A sample is one ms of one thread's CPU (cpu-clock at 1000 Hz).
import { join } from "node:path";

const HZ = 1000;

export interface PerfSplit {
  samples: number;
  /** Samples by thread name (comm). */
  threads: Map<string, number>;
  /** Samples by what the kernel was doing under them: the system call or page fault at the bottom of the kernel stack; "user" when none. */
  kernel: Map<string, number>;
}

/** Whether perf can sample here (the binary exists and the kernel lets it). */
export async function perfWorks(): Promise<boolean> {
  if (!Bun.which("perf")) return false;
  const p = Bun.spawn(["perf", "record", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"], {
    stdout: "ignore",
    stderr: "ignore",
  });
  return (await p.exited) === 0;
}

/** Records `pids` (every thread) for `seconds`, then splits the samples. */
export async function perfRecord(pids: number[], seconds: number, dir: string): Promise<PerfSplit> {
  const data = join(dir, "perf.data");
  const rec = Bun.spawn(
    [
      "perf",
      "record",
      "-e",
      "cpu-clock",
      "-F",
      String(HZ),
      "-g",
      "-p",
      pids.join(","),
      "-o",
      data,
      "--",
      "sleep",
      String(seconds),
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
  if ((await rec.exited) !== 0) throw new Error(`perf record failed: ${await new Response(rec.stderr).text()}`);
  const script = Bun.spawn(["perf", "script", "-i", data], { stdout: "pipe", stderr: "ignore" });
  const text = await new Response(script.stdout).text();
  await script.exited;
  return splitSamples(text);
}

/** `perf script` output (blocks of a header line and its stack, innermost frame first) split by thread and kernel entry. */
function splitSamples(text: string): PerfSplit {
  const split: PerfSplit = { samples: 0, threads: new Map(), kernel: new Map() };
  const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split("\n").filter((l) => l.trim() !== "");
    if (lines.length === 0) continue;
    split.samples++;
    // A thread name may hold spaces: it ends where the pid begins.
    add(split.threads, /^(.*?)\s+\d+(\/\d+)?\s/.exec(lines[0]!)?.[1]?.trim() ?? "?");
    let entry = "user";
    for (let i = lines.length - 1; i >= 1; i--) {
      const symbol = /^\s*[0-9a-f]+\s+([^+\s]+)/.exec(lines[i]!)?.[1];
      if (symbol !== undefined && (symbol.startsWith("__x64_sys_") || symbol === "asm_exc_page_fault")) {
        entry = symbol === "asm_exc_page_fault" ? "page faults" : symbol.slice("__x64_sys_".length);
        break;
      }
    }
    if (entry === "user" && block.includes("[kernel.kallsyms]")) entry = "kernel, other (interrupts, scheduling)";
    add(split.kernel, entry);
  }
  return split;
}

/** Markdown tables: CPU µs per `unit` by thread and by kernel entry (those of at least 0.5 %). */
export function perfTables(split: PerfSplit, units: number, unit: string): string[] {
  const us = (n: number) => ((n * (1e6 / HZ)) / units).toFixed(1);
  const rows = (m: Map<string, number>) =>
    [...m]
      .filter(([, n]) => n >= split.samples * 0.005)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `| ${k} | ${((100 * n) / split.samples).toFixed(1)}% | ${us(n)} |`);
  return [
    `perf, every thread and the kernel: ${split.samples} samples, ${us(split.samples)} µs of CPU per ${unit}`,
    "",
    `| thread | share | µs per ${unit} |`,
    "|---|---:|---:|",
    ...rows(split.threads),
    "",
    `| in the kernel for | share | µs per ${unit} |`,
    "|---|---:|---:|",
    ...rows(split.kernel),
  ];
}
