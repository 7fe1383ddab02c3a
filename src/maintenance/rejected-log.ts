// The rejected-reports log as the admin API and `installstats rejected` show it: one JSON object
// per entry, with the status the request was answered and the raw body.
import { t, type Static } from "elysia";
import { statusOf } from "../ingest/status.ts";
import type { RejectedEntry } from "../store/contract.ts";

export const RejectedEntryJson = t.Object({
  id: t.Integer(),
  received_at: t.String({ format: "date-time" }),
  endpoint: t.String(),
  reason: t.String(),
  http_status: t.Integer({ description: "what the request was answered" }),
  field: t.Nullable(t.String()),
  message: t.String(),
  random_id: t.Nullable(t.String()),
  body: t.Nullable(t.String({ description: "the raw body, when it is valid UTF-8" })),
  body_base64: t.Nullable(t.String({ description: "the raw body in base64, when it is not" })),
  replayed_at: t.Nullable(t.String({ format: "date-time" })),
  replay_result: t.Nullable(t.String()),
});
type RejectedEntryJson = Static<typeof RejectedEntryJson>;

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The body as text when it is valid UTF-8, else in base64, so nothing is lost in the listing. */
function describeBody(bytes: Uint8Array): Pick<RejectedEntryJson, "body" | "body_base64"> {
  try {
    return { body: strictUtf8.decode(bytes), body_base64: null };
  } catch {
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
  ...describeBody(e.body),
  replayed_at: e.replayedAt === null ? null : new Date(e.replayedAt).toISOString(),
  replay_result: e.replayResult,
});
