// Reading the rejected-reports log (raw bodies kept with their reason).
import { and, desc, eq, lt, type SQL } from "drizzle-orm";
import type { Db } from "./database.ts";
import { rejectedReports, type RejectReason } from "./schema.ts";

export interface RejectedEntry {
  id: number;
  received_at: string;
  endpoint: string;
  reason: RejectReason;
  http_status: number;
  field: string | null;
  message: string;
  random_id: string | null;
  /** The body as text when it is valid UTF-8. */
  body: string | null;
  /** The body in base64 when it is not valid UTF-8, so nothing is lost in the listing. */
  body_base64: string | null;
  replayed_at: string | null;
  replay_result: string | null;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

export function describeBody(bytes: Uint8Array): Pick<RejectedEntry, "body" | "body_base64"> {
  try {
    return { body: strictUtf8.decode(bytes), body_base64: null };
  } catch {
    return { body: null, body_base64: Buffer.from(bytes).toString("base64") };
  }
}

/** Newest first; `before` is the id to continue from. */
export function listRejected(db: Db, opts: { limit: number; reason?: RejectReason; before?: number }): RejectedEntry[] {
  const where: SQL[] = [];
  if (opts.reason) where.push(eq(rejectedReports.reason, opts.reason));
  if (opts.before !== undefined) where.push(lt(rejectedReports.id, opts.before));
  return db
    .select()
    .from(rejectedReports)
    .where(and(...where))
    .orderBy(desc(rejectedReports.id))
    .limit(opts.limit)
    .all()
    .map((r) => ({
      id: r.id,
      received_at: new Date(r.receivedAt).toISOString(),
      endpoint: r.endpoint,
      reason: r.reason,
      http_status: r.httpStatus,
      field: r.field,
      message: r.message,
      random_id: r.randomId,
      ...describeBody(r.body),
      replayed_at: r.replayedAt === null ? null : new Date(r.replayedAt).toISOString(),
      replay_result: r.replayResult,
    }));
}
