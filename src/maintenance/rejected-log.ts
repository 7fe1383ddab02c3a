// The rejected-reports log as the admin API and `installstats rejected` show it: one JSON object
// per entry, with the status the request was answered and the raw body.
import { t, type Static } from "elysia";
import { statusOf } from "../ingest/status.ts";
import type { RejectedEntry } from "../store/contract/rejected.ts";

export const RejectedEntryJson = t.Object({
  id: t.Integer(),
  received_at: t.String({ format: "date-time" }),
  endpoint: t.String(),
  reason: t.String(),
  http_status: t.Integer({ description: "what the request was answered" }),
  field: t.Nullable(t.String()),
  message: t.String(),
  random_id: t.Nullable(t.String()),
  body: t.Nullable(
    t.String({ description: "the raw body, when it is valid UTF-8 (its first 256 bytes when body_truncated)" }),
  ),
  body_base64: t.Nullable(t.String({ description: "the raw body in base64, when it is not" })),
  body_size: t.Integer({ description: "bytes of the body as received" }),
  body_sha256: t.Nullable(
    t.String({ description: "SHA-256 of the body as received (hex); null for entries logged before budgets existed" }),
  ),
  body_truncated: t.Boolean({
    description: "true when the log was past its budget: only the body's first 256 bytes were kept",
  }),
  replayed_at: t.Nullable(t.String({ format: "date-time" })),
  replay_result: t.Nullable(t.String()),
});
type RejectedEntryJson = Static<typeof RejectedEntryJson>;

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The body as text when it is valid UTF-8, else in base64, so nothing is lost in the listing (a
 * head cut inside a character is shown as text up to it).
 */
function describeBody(bytes: Uint8Array, truncated: boolean): Pick<RejectedEntryJson, "body" | "body_base64"> {
  try {
    return { body: strictUtf8.decode(bytes), body_base64: null };
  } catch {
    if (truncated) {
      for (let cut = 1; cut <= 3 && cut < bytes.length; cut++) {
        try {
          return { body: strictUtf8.decode(bytes.subarray(0, bytes.length - cut)), body_base64: null };
        } catch {
          // not a cut inside a character: try one more byte
        }
      }
    }
    return { body: null, body_base64: Buffer.from(bytes).toString("base64") };
  }
}

export const toRejectedJson = (e: RejectedEntry): RejectedEntryJson => ({
  id: e.id,
  received_at: new Date(e.receivedAt).toISOString(),
  endpoint: e.endpoint,
  reason: e.reason,
  http_status: statusOf(e.reason, e.result),
  field: e.field,
  message: e.message,
  random_id: e.randomId,
  ...describeBody(e.body, !e.bodyKept),
  body_size: e.bodySize,
  body_sha256: e.bodySha256,
  body_truncated: !e.bodyKept,
  replayed_at: e.replayedAt === null ? null : new Date(e.replayedAt).toISOString(),
  replay_result: e.replayResult,
});
