// Long error texts stored compressed. Current clients send the last lines of the install log
// with every failure (~10 KiB); kept whole, they were four fifths of the database (2,490 bytes
// per execution at 1M, docs/performance.md#ingestion-bun-scriptsbench-ingestts). A text longer than ERROR_HEAD characters keeps its
// head in `error`, where free-text search and exact grouping still see it, and the rest in
// `error_rest`, zstd-compressed (log tails shrink 5-15x). Reads put the two back together.
import type { Execution } from "../../domain/execution.ts";

/** An error text as stored: its head and, when long, its compressed rest. */
export interface SplitError {
  error: string | null;
  errorRest: Buffer | null;
}

/**
 * Characters of a long error text kept uncompressed: what search matches and a listing shows
 * first. 200, as the error signature (the client's header line "exit_code=N | ... | at line L:
 * CMD" and a little more); it was 512 until migration 0017, whose rows keep their split.
 */
export const ERROR_HEAD = 200;

/** The text split as stored (no copy of its execution: a row is written for every report). */
export function splitError(error: string | null): SplitError {
  if (error === null || error.length <= ERROR_HEAD) return { error, errorRest: null };
  // Never between the two halves of a surrogate pair: each part must be valid UTF-16 on its own.
  const high = error.charCodeAt(ERROR_HEAD - 1);
  const cut = high >= 0xd800 && high <= 0xdbff ? ERROR_HEAD - 1 : ERROR_HEAD;
  const packed = Bun.zstdCompressSync(Buffer.from(error.slice(cut)));
  return { error: error.slice(0, cut), errorRest: Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength) };
}

/** The whole text from its stored parts. */
export const joinError = (head: string | null, rest: Uint8Array | null): string | null =>
  rest === null ? head : (head ?? "") + Buffer.from(Bun.zstdDecompressSync(rest)).toString("utf8");

export function fromRow({ errorRest, ...e }: Execution & { errorRest: Uint8Array | null }): Execution {
  return errorRest === null ? e : { ...e, error: joinError(e.error, errorRest) };
}
