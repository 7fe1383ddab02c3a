// Admin actions over HTTP; every route here needs the admin token (src/http/access.ts).
import { Elysia, t, type Static } from "elysia";
import { ErrorBody, errorBody } from "../http/errors.ts";
import type { GroupCommitWriter } from "../store/writer.ts";
import { REJECT_REASONS } from "../domain/rejection.ts";
import type { MaintenanceReads } from "../store/contract/maintenance.ts";
import type { RejectedReads } from "../store/contract/rejected.ts";
import { RejectedEntryJson, toRejectedJson } from "./rejected-log.ts";
import { parseDuration } from "../config.ts";
import { QueryError, docParam, intParam, oneOf, strictQuery } from "../read/query.ts";
import type { Maintenance } from "./service.ts";
import { REPLAYABLE } from "./replay.ts";

const security = [{ bearer: [] }];

const tags = ["admin"];

const DeleteRoute = {
  params: t.Object({ random_id: t.String({ minLength: 1, maxLength: 128 }) }),
  response: { 200: t.Object({ deleted: t.Literal(true), random_id: t.String() }), 404: ErrorBody },
  detail: {
    tags,
    security,
    summary: "Delete everything stored about one install (data-deletion requests)",
    description:
      "Removes the record, a held status update and every rejected-log body with that random_id; aggregates follow at once.",
  },
};

const RejectedQuery = t.Object({
  limit: docParam("entries per page: a whole number from 1 to 1000 (default 100)"),
  reason: docParam("only entries of this reason", REJECT_REASONS),
  before: docParam("continue below this entry id (a whole number)"),
});
const RejectedRoute = {
  ...strictQuery(RejectedQuery),
  response: { 200: t.Object({ entries: t.Array(RejectedEntryJson) }), 400: ErrorBody },
  detail: { tags, security, summary: "The rejected-reports log, newest first, with raw bodies" },
};

/** A page of the log; checked as the read API's parameters are: a 400 naming the parameter and its range. */
async function rejectedPage(store: RejectedReads, query: Static<typeof RejectedQuery>) {
  const limit = intParam("limit", query.limit, 1, 1000) ?? 100;
  const reason = oneOf("reason", query.reason, REJECT_REASONS);
  const before = intParam("before", query.before, 1, Number.MAX_SAFE_INTEGER);
  return { entries: (await store.listRejected({ limit, reason, before })).map(toRejectedJson) };
}

const PruneQuery = t.Object({
  older_than: t.String({ description: "e.g. 400d, 12w, 36h" }),
  dry_run: t.Optional(t.BooleanString()),
});
const PruneRoute = {
  // Strict: a misspelt dry_run would otherwise delete for real.
  ...strictQuery(PruneQuery),
  response: {
    200: t.Object({
      cutoff: t.String(),
      dry_run: t.Boolean(),
      executions: t.Integer(),
      held: t.Integer(),
      rejected: t.Integer(),
    }),
    400: ErrorBody,
  },
  detail: {
    tags,
    security,
    summary: "Delete installs and rejected reports older than a duration",
    description: "Aggregates follow at once (rollups are kept exact).",
  },
};

async function prune(maintenance: Maintenance, query: Static<typeof PruneQuery>) {
  const olderThan = parseDuration(query.older_than);
  if (!Number.isFinite(olderThan) || olderThan <= 0)
    throw new QueryError("older_than", "older_than must be a duration such as 400d, 12w or 36h");
  return maintenance.prune(olderThan, query.dry_run === true);
}

const ReplayQuery = t.Object({
  reason: docParam("only entries of this reason", REPLAYABLE),
  limit: docParam("at most this many entries (a whole number)"),
  dry_run: t.Optional(t.BooleanString()),
});
const ReplayRoute = {
  ...strictQuery(ReplayQuery),
  response: {
    200: t.Object({
      dry_run: t.Boolean(),
      tried: t.Integer(),
      results: t.Record(t.String(), t.Integer()),
      skipped: t.Integer(),
    }),
    400: ErrorBody,
  },
  detail: { tags, security, summary: "Re-run rejected reports through the current parser" },
};

const BackupRoute = {
  response: { 200: t.Object({ path: t.String(), bytes: t.Integer(), removed: t.Array(t.String()) }) },
  detail: {
    tags,
    security,
    summary: "Write a consistent backup into the backup directory (keeps the newest backup-keep)",
  },
};

export function adminRoutes(deps: {
  store: MaintenanceReads & RejectedReads;
  writer: GroupCommitWriter;
  clock: () => number;
  maintenance: Maintenance;
}) {
  const { store, writer, clock, maintenance } = deps;
  return new Elysia({ name: "admin" })
    .delete(
      "/api/installs/:random_id",
      async ({ params, status }) => {
        const result = await writer.submit({ kind: "delete", randomId: params.random_id, at: clock() });
        if (result.kind !== "deleted" || !result.found)
          return status(404, errorBody("not_found", `nothing stored for random_id ${params.random_id}`, "random_id"));
        return status(200, { deleted: true as const, random_id: params.random_id });
      },
      DeleteRoute,
    )
    .get("/api/admin/rejected", ({ query }) => rejectedPage(store, query), RejectedRoute)
    .post("/api/admin/prune", ({ query }) => prune(maintenance, query), PruneRoute)
    .post(
      "/api/admin/replay",
      ({ query }) =>
        maintenance.replay({
          reason: oneOf("reason", query.reason, REPLAYABLE),
          limit: intParam("limit", query.limit, 1, Number.MAX_SAFE_INTEGER),
          dryRun: query.dry_run === true,
        }),
      ReplayRoute,
    )
    .post("/api/admin/backup", () => maintenance.backup(), BackupRoute);
}
