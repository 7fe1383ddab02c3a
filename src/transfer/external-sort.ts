// Sorting more lines than fit in memory: lines are gathered up to a bound, each full set sorted
// and written to a temporary file (a run), and the runs merged; a merge of too many runs at once
// first merges them in groups. Memory stays within the bound whatever the input's size; the disk
// holds about the input once (twice for a moment while a group is merged). Lines are compared as
// strings (UTF-16 code units) and hold no newline.
import { createReadStream, mkdtempSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Characters of lines kept in memory before a run is written (~2 bytes each, plus the array). */
const RUN_CHARS = 8 * 1024 * 1024;
/** Runs merged at once; more are merged in groups first. */
const FAN_IN = 64;
/** Characters written to a run file per write. */
const WRITE_CHARS = 1024 * 1024;

async function writeRun(path: string, lines: Iterable<string> | AsyncIterable<string>): Promise<void> {
  const file = await open(path, "w");
  try {
    let buffer: string[] = [];
    let size = 0;
    for await (const line of lines) {
      buffer.push(line);
      size += line.length + 1;
      if (size >= WRITE_CHARS) {
        await file.write(`${buffer.join("\n")}\n`);
        buffer = [];
        size = 0;
      }
    }
    if (buffer.length > 0) await file.write(`${buffer.join("\n")}\n`);
  } finally {
    await file.close();
  }
}

/** Characters read from a run at a time: a merge of FAN_IN runs holds FAN_IN of these. */
const READ_BYTES = 64 * 1024;

async function* readLines(path: string): AsyncGenerator<string> {
  let rest = "";
  for await (const chunk of createReadStream(path, {
    encoding: "utf8",
    highWaterMark: READ_BYTES,
  }) as AsyncIterable<string>) {
    const text = rest + chunk;
    let start = 0;
    for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
      yield text.slice(start, nl);
      start = nl + 1;
    }
    rest = text.slice(start);
  }
  if (rest !== "") yield rest;
}

/** The lines of sorted sources, merged in order (a binary heap over each source's next line). */
async function* merge(sources: AsyncGenerator<string>[]): AsyncGenerator<string> {
  const heap: { line: string; source: AsyncGenerator<string> }[] = [];
  const less = (a: number, b: number) => heap[a]!.line < heap[b]!.line;
  const swap = (a: number, b: number) => ([heap[a], heap[b]] = [heap[b]!, heap[a]!]);
  const up = (i: number) => {
    while (i > 0 && less(i, (i - 1) >> 1)) {
      swap(i, (i - 1) >> 1);
      i = (i - 1) >> 1;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && less(l, m)) m = l;
      if (r < heap.length && less(r, m)) m = r;
      if (m === i) return;
      swap(i, m);
      i = m;
    }
  };
  for (const source of sources) {
    const next = await source.next();
    if (!next.done) {
      heap.push({ line: next.value, source });
      up(heap.length - 1);
    }
  }
  while (heap.length > 0) {
    const top = heap[0]!;
    yield top.line;
    const next = await top.source.next();
    if (next.done) {
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        down(0);
      }
    } else {
      top.line = next.value;
      down(0);
    }
  }
}

export class ExternalSort {
  private lines: string[] = [];
  private chars = 0;
  private runs: string[] = [];
  private dir: string | null = null;

  constructor(private readonly opts: { runChars?: number; fanIn?: number; tmp?: string } = {}) {}

  /** Adds a line (no newline in it); writes a run when memory holds enough. */
  async add(line: string): Promise<void> {
    this.lines.push(line);
    this.chars += line.length + 16;
    if (this.chars >= (this.opts.runChars ?? RUN_CHARS)) await this.spill();
  }

  private async spill(): Promise<void> {
    this.dir ??= mkdtempSync(join(this.opts.tmp ?? tmpdir(), "installstats-sort-"));
    const path = join(this.dir, `run-${this.runs.length}-${Date.now()}`);
    const lines = this.lines.sort();
    this.lines = [];
    this.chars = 0;
    await writeRun(path, lines);
    this.runs.push(path);
  }

  /** Every line added, in order. Call once, after the last add; `close` removes what was written. */
  async *sorted(): AsyncGenerator<string> {
    if (this.runs.length === 0) {
      const lines = this.lines.sort();
      this.lines = [];
      yield* lines;
      return;
    }
    if (this.lines.length > 0) await this.spill();
    const fanIn = this.opts.fanIn ?? FAN_IN;
    while (this.runs.length > fanIn) {
      const group = this.runs.splice(0, fanIn);
      const path = join(this.dir!, `merged-${this.runs.length}-${Date.now()}`);
      await writeRun(path, merge(group.map(readLines)));
      for (const done of group) rmSync(done, { force: true });
      this.runs.push(path);
    }
    yield* merge(this.runs.map(readLines));
  }

  /** Removes the temporary files. */
  close(): void {
    if (this.dir !== null) rmSync(this.dir, { recursive: true, force: true });
    this.dir = null;
    this.runs = [];
    this.lines = [];
  }
}
