// The read threads of a serving SQLite engine (scanner.ts): the Store's scans of executions run
// there, each with a time budget. A scan past its budget is stopped by ending its thread, which
// is started afresh: bun:sqlite cannot interrupt a statement, and a thread can always be ended.
import type { Execution } from "../../domain/execution.ts";
import type { Logger } from "../../log.ts";
import { ReadBudgetError } from "../contract/errors.ts";
import type { AppType, ExecutionFilter, ListCursor, PageQuery } from "../contract/executions.ts";
import type { HourCells, ScanReply, ScanRequest, ScannerStart } from "./scanner.ts";

type Page = { limit: number; after?: ListCursor; order?: "newest" | "oldest" };
type ChunkPage = { offset?: number; limit?: number; chunkRows?: number };
type Pending = {
  request: ScanRequest;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  timer: Timer | null;
};

/** The scans a serving store hands to its read threads. */
export interface Scans {
  listExecutions(filter: ExecutionFilter, page: Page): Promise<{ rows: Execution[]; next: ListCursor | null }>;
  pageExecutions(filter: ExecutionFilter, page: PageQuery): Promise<{ rows: Execution[]; total: number }>;
  typesOfApps(apps: readonly string[]): Promise<AppType[]>;
  executionChunks(filter: ExecutionFilter, page?: ChunkPage): AsyncGenerator<Execution[], void>;
  errorTextCounts(): Promise<{ error: string; count: number }[]>;
  /** Hour cells of `slice` counted from the executions of `filter` (old-hours.ts), encoded. */
  hourCells(filter: ExecutionFilter, slice: string): Promise<HourCells>;
  stop(): void;
}

interface Thread {
  /** Started by the first scan sent to it: a server that only ingests runs none (~5 MB each). */
  worker: Worker | null;
  /** Moves when the thread is started afresh: streams opened before cannot go on. */
  generation: number;
  pending: Map<number, Pending>;
}

export interface ScanOptions {
  threads: number;
  /** Longest a scan (one listing, one chunk) may take, in ms; 0 = no limit. */
  budgetMs: number;
  log: Logger;
}

/** An error the read thread met, rebuilt with SQLite's code so the store can tell damage from the rest. */
const rebuilt = (reply: Extract<ScanReply, { ok: false }>): Error =>
  Object.assign(new Error(reply.message), { name: reply.name, code: reply.code ?? undefined });

/** What the read threads share: where they start from, their options, the ids handed out, and whether they stopped. */
interface Pool {
  workerUrl: URL;
  path: string;
  opts: ScanOptions;
  threads: Thread[];
  nextId: number;
  nextStream: number;
  stopped: boolean;
}

/** A new read thread for `owner` (a function: the thread record is built around the worker). */
function spawn(pool: Pool, owner: () => Thread): Worker {
  const worker = new Worker(pool.workerUrl.href);
  worker.onmessage = (event: MessageEvent<ScanReply>) => {
    const reply = event.data;
    const thread = owner();
    const pending = thread.pending.get(reply.id);
    if (!pending) return;
    thread.pending.delete(reply.id);
    if (pending.timer) clearTimeout(pending.timer);
    if (reply.ok) pending.resolve(reply.value);
    else pending.reject(rebuilt(reply));
  };
  worker.onerror = (event) => {
    pool.opts.log.error("read thread died; the next read starts another", { error: event.message });
    restart(pool, owner(), null);
  };
  worker.postMessage({ path: pool.path } satisfies ScannerStart);
  return worker;
}

/** Scans asked again on a new thread when theirs was ended: they hold nothing open between requests. */
const askAgain = (request: ScanRequest): boolean =>
  request.op === "list" ||
  request.op === "page" ||
  request.op === "types" ||
  request.op === "errors" ||
  request.op === "hours";

/** Ends the thread and starts another; `late` (the scan past its budget) fails, other listings are asked again. */
function restart(pool: Pool, thread: Thread, late: number | null): void {
  thread.worker?.terminate();
  thread.generation++;
  const pending = [...thread.pending.values()];
  thread.pending.clear();
  thread.worker = null; // the next scan starts another
  if (pool.stopped) return;
  const seconds = pool.opts.budgetMs / 1000;
  for (const p of pending) {
    if (p.timer) clearTimeout(p.timer);
    if (p.request.id === late) {
      p.reject(
        new ReadBudgetError(
          `this read took longer than the read budget (${seconds} s) and was stopped; narrow it (a shorter window, fewer filters on free text) or raise --read-budget`,
        ),
      );
    } else if (askAgain(p.request)) {
      send(pool, thread, p.request).then(p.resolve, p.reject);
    } else {
      const why =
        late === null ? "the read thread failed" : `another read took longer than the read budget of ${seconds} s`;
      p.reject(new ReadBudgetError(`this read was stopped with its read thread (${why}); try again`));
    }
  }
}

function send(pool: Pool, thread: Thread, request: ScanRequest): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const { budgetMs } = pool.opts;
    const timer = budgetMs > 0 ? setTimeout(() => restart(pool, thread, request.id), budgetMs) : null;
    thread.pending.set(request.id, { request, resolve, reject, timer });
    thread.worker ??= spawn(pool, () => thread);
    thread.worker.postMessage(request);
  });
}

/** The thread with the least work waiting. */
const pick = (pool: Pool): Thread => pool.threads.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));

/** A scan on the least busy thread. */
const ask = <T>(pool: Pool, request: DistributiveOmit<ScanRequest, "id">): Promise<T> =>
  send(pool, pick(pool), { ...request, id: pool.nextId++ }) as Promise<T>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A stream of chunks, each asked for when the consumer wants it, on one thread while that thread lives. */
async function* chunks(pool: Pool, filter: ExecutionFilter, page: ChunkPage): AsyncGenerator<Execution[], void> {
  const thread = pick(pool);
  const generation = thread.generation;
  const stream = pool.nextStream++;
  await send(pool, thread, { id: pool.nextId++, op: "open", stream, filter, page });
  try {
    for (;;) {
      if (thread.generation !== generation)
        throw new ReadBudgetError("this read was stopped with its read thread; try again");
      const chunk = (await send(pool, thread, { id: pool.nextId++, op: "next", stream })) as Execution[] | null;
      if (chunk === null) return;
      yield chunk;
    }
  } finally {
    // A consumer that stops early (a download cancelled) ends the stream there too.
    if (thread.generation === generation && !pool.stopped)
      thread.worker?.postMessage({ id: pool.nextId++, op: "close", stream } satisfies ScanRequest);
  }
}

function stop(pool: Pool): void {
  pool.stopped = true;
  for (const thread of pool.threads) {
    thread.worker?.terminate();
    for (const p of thread.pending.values()) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(new ReadBudgetError("the server is stopping"));
    }
    thread.pending.clear();
  }
}

/** `workerUrl` is scanner.ts as the entry module sees it (see checkpoint-thread.ts). */
export function startScanThreads(workerUrl: URL, path: string, opts: ScanOptions): Scans {
  const pool: Pool = {
    workerUrl,
    path,
    opts,
    threads: Array.from({ length: Math.max(1, opts.threads) }, () => ({
      worker: null,
      generation: 0,
      pending: new Map(),
    })),
    nextId: 0,
    nextStream: 0,
    stopped: false,
  };
  return {
    listExecutions: (filter, page) => ask(pool, { op: "list", filter, page }),
    pageExecutions: (filter, page) => ask(pool, { op: "page", filter, page }),
    typesOfApps: (apps) => ask(pool, { op: "types", apps }),
    errorTextCounts: () => ask(pool, { op: "errors" }),
    hourCells: (filter, slice) => ask(pool, { op: "hours", filter, slice }),
    executionChunks: (filter, page = {}) => chunks(pool, filter, page),
    stop: () => stop(pool),
  };
}
