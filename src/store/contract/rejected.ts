// The rejected-reports log as the Store contract knows it: refusals logged, retention, replay,
// and the log read back (the admin API, replay, the alert on refusals).
import type { RejectReason, Rejection } from "../../domain/rejection.ts";
import type { ReportResult } from "./executions.ts";
import type { ReadTable } from "./reads.ts";

/** What refusals and the log's upkeep write. */
export type RejectedWrite =
  /** A refused request, logged raw with its reason (`headOnly`: only its body's head, with size and hash: its client's share of the log is used up). */
  | { kind: "reject"; rejection: Rejection; at: number; headOnly?: boolean }
  /** Drops rejected-log entries received before `before` (retention). */
  | { kind: "forget-rejected"; before: number; at: number }
  /** Records what came of replaying a rejected-log entry through the current parser. */
  | { kind: "mark-replayed"; rejectedId: number; result: string; at: number };

export interface RejectedResults {
  reject: { kind: "logged" };
  "forget-rejected": { kind: "forgotten"; count: number };
  "mark-replayed": { kind: "marked" };
}

/** One entry of the rejected-reports log, in storage terms. */
export interface RejectedEntry extends Omit<Rejection, "body"> {
  id: number;
  receivedAt: number;
  /** What the write of a repaired report came to; null for refusals. */
  result: ReportResult["kind"] | null;
  /** The raw body; only its first bytes when `bodyKept` is false. */
  body: Uint8Array;
  replayedAt: number | null;
  replayResult: string | null;
  /** Bytes of the body as received. */
  bodySize: number;
  /** SHA-256 of the body as received (hex); null for entries logged before budgets existed. */
  bodySha256: string | null;
  /** False when the log was past its budget: `body` is then the body's head only. */
  bodyKept: boolean;
}

/** What the log's readers ask. */
export interface RejectedReads {
  /** The rejected-reports log, newest first; `before` is the id to continue from. */
  listRejected(opts: { limit: number; reason?: RejectReason; before?: number }): Promise<RejectedEntry[]>;
  /**
   * Log entries of `reasons` that a replay should try, oldest first, with ids above `afterId`:
   * never replayed, or replayed with a result starting with `retryPrefix` (still invalid then).
   */
  replayCandidates(opts: {
    reasons: readonly RejectReason[];
    retryPrefix: string;
    afterId: number;
    limit: number;
  }): Promise<RejectedEntry[]>;
  /** Entries of `reasons` replayed for good (with a result not starting with `retryPrefix`). */
  countReplayed(reasons: readonly RejectReason[], retryPrefix: string): Promise<number>;
  /** Entries of the rejected-reports log received in [from, to), per reason (reasons with none left out). */
  rejectedCounts(from: number, to: number): Promise<Partial<Record<RejectReason, number>>>;
}

export const REJECTED_READS = {
  listRejected: "once",
  replayCandidates: "once",
  countReplayed: "once",
  rejectedCounts: "once",
} as const satisfies ReadTable<RejectedReads>;
