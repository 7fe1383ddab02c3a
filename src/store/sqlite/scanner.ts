// A read thread (worker entry point): answers the Store's scans of executions (listings, streamed
// chunks, exact error texts) on a read-only connection of its own, so that a long scan never holds
// up the thread that acknowledges reports. Started and fed by scan-threads.ts.
import { Database } from "bun:sqlite";
import { drizzle } from "drizzle-orm/bun-sqlite";
import type { Execution } from "../../domain/execution.ts";
import type { AppType, ExecutionFilter, ListCursor, PageQuery } from "../contract/executions.ts";
import { isAllApps } from "../../domain/rollup.ts";
import { encodeCell, type StoredParts } from "../../domain/rollup-codec.ts";
import { LabelCache } from "../common/labels.ts";
import { countHours } from "../common/old-hours.ts";
import { createSqliteReads } from "./reads.ts";
import * as schema from "./schema.ts";

export interface ScannerStart {
  path: string;
}

export type ScanRequest =
  | {
      id: number;
      op: "list";
      filter: ExecutionFilter;
      page: { limit: number; after?: ListCursor; order?: "newest" | "oldest" };
    }
  | { id: number; op: "page"; filter: ExecutionFilter; page: PageQuery }
  | { id: number; op: "types"; apps: readonly string[] }
  /** Opens a stream of chunks (executionChunks); `next` pulls one, `close` ends it. */
  | {
      id: number;
      op: "open";
      stream: number;
      filter: ExecutionFilter;
      page: { offset?: number; limit?: number; chunkRows?: number };
    }
  | { id: number; op: "next"; stream: number }
  | { id: number; op: "close"; stream: number }
  | { id: number; op: "errors" }
  /** Hour cells of a slice counted from the executions of `filter` (old-hours.ts), sent encoded (HourCells). */
  | { id: number; op: "hours"; filter: ExecutionFilter; slice: string };

/** Counted hour cells as they cross to the main thread: encoded (rollup-codec.ts) with the labels they use. */
export interface HourCells {
  labels: { id: number; label: string }[];
  cells: ({ bucket: number } & StoredParts)[];
}

type ScanValue =
  | { rows: Execution[]; next: ListCursor | null }
  | { rows: Execution[]; total: number }
  | Execution[]
  | AppType[]
  | null
  | { error: string; count: number }[]
  | HourCells;

export type ScanReply =
  | { id: number; ok: true; value: ScanValue }
  /** `code`: SQLite's error code, so the caller can tell damage from anything else. */
  | { id: number; ok: false; message: string; name: string; code: string | null };

declare const self: Worker;

let reads: ReturnType<typeof createSqliteReads> | null = null;
const streams = new Map<number, Generator<Execution[], void>>();

/** Counts here and sends the cells small: a day's executions would cost more to send than to count. */
async function hourCells(filter: ExecutionFilter, slice: string): Promise<HourCells> {
  const cells = await countHours(reads!.executionChunks(filter), slice);
  const given: { id: number; label: string }[] = [];
  const labels = new LabelCache((label) => {
    given.push({ id: given.length + 1, label });
    return given.length;
  });
  return {
    cells: cells.map(({ bucket, data }) => ({ bucket, ...encodeCell(data, isAllApps(slice), labels) })),
    labels: given,
  };
}

function answer(request: ScanRequest): ScanValue | Promise<ScanValue> {
  if (!reads) throw new Error("the read thread has no database");
  switch (request.op) {
    case "list":
      return reads.listExecutions(request.filter, request.page);
    case "types":
      return reads.typesOfApps(request.apps);
    case "page":
      return reads.pageExecutions(request.filter, request.page);
    case "errors":
      return reads.errorTextCounts();
    case "hours":
      return hourCells(request.filter, request.slice);
    case "open":
      streams.set(request.stream, reads.executionChunks(request.filter, request.page));
      return null;
    case "next": {
      const it = streams.get(request.stream);
      const next = it?.next();
      if (!next || next.done) {
        streams.delete(request.stream);
        return null;
      }
      return next.value;
    }
    case "close":
      streams.get(request.stream)?.return();
      streams.delete(request.stream);
      return null;
  }
}

self.onmessage = async (event: MessageEvent<ScannerStart | ScanRequest>) => {
  const message = event.data;
  if ("path" in message) {
    const sqlite = new Database(message.path, { readonly: true });
    sqlite.run("PRAGMA busy_timeout = 5000");
    reads = createSqliteReads(sqlite, drizzle(sqlite, { schema }));
    return;
  }
  try {
    self.postMessage({ id: message.id, ok: true, value: await answer(message) } satisfies ScanReply);
  } catch (e) {
    const error = e instanceof Error ? e : new Error(String(e));
    const code = (error as { code?: unknown }).code;
    self.postMessage({
      id: message.id,
      ok: false,
      message: error.message,
      name: error.name,
      code: typeof code === "string" ? code : null,
    } satisfies ScanReply);
  }
};
