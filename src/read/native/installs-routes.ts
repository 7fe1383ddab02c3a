// Read API: the installs listing and one install's records (/api/installs).
import { Elysia, t, type Static } from "elysia";
import { ErrorBody, errorBody } from "../../http/errors.ts";
import type { StoreReads } from "../../store/contract/executions.ts";
import { ExecutionRecord, InstallDetail, toRecord } from "../record.ts";
import {
  FilterQuery,
  MAX_LABEL,
  QueryError,
  decodeCursor,
  docParam,
  encodeCursor,
  intParam,
  oneOf,
  readQuery,
  strictQuery,
  textParam,
} from "../query.ts";
import { signaturePage } from "../signature-filter.ts";

/** Installs one signature-filtered page may read (see signaturePage). */
const SIGNATURE_SCAN = 20_000;
/** Page size of /api/installs. */
const MAX_PAGE = 500;
const ORDERS = ["newest", "oldest"] as const;

/** An error signature id, as /api/stats/errors lists them. */
function signatureParam(v: string | undefined): string | undefined {
  if (v !== undefined && !/^[0-9a-f]{16}$/.test(v))
    throw new QueryError("signature", "signature must be 16 lowercase hex digits, an id from /api/stats/errors");
  return v;
}

const InstallPage = t.Object(
  { installs: t.Array(ExecutionRecord), next_cursor: t.Nullable(t.String()) },
  { title: "InstallPage" },
);

// Response shape, for typed clients (the dashboard).
export type InstallPageResponse = Static<typeof InstallPage>;

export function installsRoutes(deps: { store: StoreReads; clock: () => number }) {
  const { store, clock } = deps;
  const tags = ["installs"];

  return new Elysia({ name: "installs" })
    .get(
      "/api/installs",
      async ({ query }) => {
        const { filter } = readQuery(query, clock(), null);
        const limit = intParam("limit", query.limit, 1, MAX_PAGE) ?? 50;
        const order = oneOf("order", query.order, ORDERS) ?? "newest";
        const after = decodeCursor(query.cursor);
        const signature = signatureParam(query.signature);
        const page = await (signature === undefined
          ? store.listExecutions(filter, { limit, after, order })
          : signaturePage(
              (a, n) => store.listExecutions({ ...filter, outcome: "failed" }, { limit: n, after: a, order }),
              signature,
              limit,
              after,
              SIGNATURE_SCAN,
            ));
        return { installs: page.rows.map(toRecord), next_cursor: page.next ? encodeCursor(page.next) : null };
      },
      {
        ...strictQuery(
          t.Composite([
            FilterQuery,
            t.Object({
              limit: docParam(`page size, a whole number from 1 to ${MAX_PAGE}; default 50`),
              cursor: docParam("next_cursor of the previous page"),
              order: docParam("default newest", ORDERS),
              signature: docParam(
                `only failed installs with this error signature (an id from /api/stats/errors, 16 hex digits); a page reads at most ${SIGNATURE_SCAN} installs, so it may hold fewer rows than limit while next_cursor goes on`,
              ),
            }),
          ]),
        ),
        response: { 200: InstallPage, 400: ErrorBody },
        detail: {
          tags,
          summary: "List installs, newest first",
          description:
            "All filters combine; no window means all time. Pages by keyset cursor, equally fast at any depth, newest or oldest first.",
        },
      },
    )
    .get(
      "/api/installs/:random_id",
      async ({ params, status }) => {
        textParam("random_id", params.random_id, MAX_LABEL);
        const rows = await store.getExecutions(params.random_id);
        const latest = rows.at(-1);
        if (!latest)
          return status(404, errorBody("not_found", `no install with random_id ${params.random_id}`, "random_id"));
        const executions = rows.map(toRecord);
        return status(200, { ...executions.at(-1)!, executions });
      },
      {
        params: t.Object({ random_id: t.String({ description: `1-${MAX_LABEL} characters` }) }),
        response: { 200: InstallDetail, 400: ErrorBody, 404: ErrorBody },
        detail: {
          tags,
          summary: "One install by random_id: its latest execution, and all of them with their timelines",
        },
      },
    );
}
