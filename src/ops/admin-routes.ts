// Admin actions over HTTP; every route here needs the admin token (src/ops/access.ts).
import { Elysia, t } from "elysia";
import { ErrorBody, errorBody } from "../errors.ts";
import type { GroupCommitWriter } from "../ingest/writer.ts";
import { rejectedReports } from "../store/schema.ts";
import type { StoreReads } from "../store/store.ts";

const REASONS = rejectedReports.reason.enumValues;

const RejectedEntrySchema = t.Object({
  id: t.Integer(),
  received_at: t.String({ format: "date-time" }),
  endpoint: t.String(),
  reason: t.String(),
  http_status: t.Integer(),
  field: t.Nullable(t.String()),
  message: t.String(),
  random_id: t.Nullable(t.String()),
  body: t.Nullable(t.String({ description: "the raw body, when it is valid UTF-8" })),
  body_base64: t.Nullable(t.String({ description: "the raw body in base64, when it is not" })),
  replayed_at: t.Nullable(t.String({ format: "date-time" })),
  replay_result: t.Nullable(t.String()),
});

const security = [{ bearer: [] }];

export function adminRoutes(deps: { store: StoreReads; writer: GroupCommitWriter; clock: () => number }) {
  const { store, writer, clock } = deps;
  const tags = ["admin"];
  return new Elysia({ name: "admin" })
    .delete(
      "/api/installs/:random_id",
      async ({ params, status }) => {
        const result = await writer.submit({ kind: "delete", randomId: params.random_id, at: clock() });
        if (result.kind !== "deleted" || !result.found) return status(404, errorBody("not_found", `nothing stored for random_id ${params.random_id}`, "random_id"));
        return status(200, { deleted: true as const, random_id: params.random_id });
      },
      {
        params: t.Object({ random_id: t.String({ minLength: 1, maxLength: 128 }) }),
        response: { 200: t.Object({ deleted: t.Literal(true), random_id: t.String() }), 404: ErrorBody },
        detail: {
          tags,
          security,
          summary: "Delete everything stored about one install (data-deletion requests)",
          description: "Removes the record, a held status update and every rejected-log body with that random_id; aggregates follow at once.",
        },
      },
    )
    .get(
      "/api/admin/rejected",
      ({ query }) => ({ entries: store.listRejected({ limit: query.limit ?? 100, reason: query.reason, before: query.before }) }),
      {
        query: t.Object({
          limit: t.Optional(t.Numeric({ minimum: 1, maximum: 1000 })),
          reason: t.Optional(t.Union(REASONS.map((r) => t.Literal(r)))),
          before: t.Optional(t.Numeric({ minimum: 1, description: "continue below this entry id" })),
        }),
        response: { 200: t.Object({ entries: t.Array(RejectedEntrySchema) }), 422: ErrorBody },
        detail: { tags, security, summary: "The rejected-reports log, newest first, with raw bodies" },
      },
    );
}
