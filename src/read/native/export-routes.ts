// GET /api/export: every install matching the read API's filters, streamed as CSV or NDJSON.
import { Elysia, t } from "elysia";
import { ErrorBody } from "../../http/errors.ts";
import type { StoreReads } from "../../store/contract/executions.ts";
import {
  CONTENT_TYPES,
  EXPORT_CHUNK_ROWS,
  EXPORT_COLUMNS,
  exportFilename,
  exportStream,
  type ExportFormat,
} from "../export.ts";
import { FilterQuery, resolveWindow, strictQuery, toFilter } from "../query.ts";

/** CSV unless asked otherwise: an export is mostly opened in a spreadsheet app. */
export const DEFAULT_EXPORT_FORMAT: ExportFormat = "csv";

const ExportQuery = t.Composite([
  FilterQuery,
  t.Object({
    format: t.Optional(
      t.Union([t.Literal("csv"), t.Literal("ndjson")], {
        description:
          "csv (default; for spreadsheets, guarded against formula injection) or ndjson (lossless, one JSON record per line)",
      }),
    ),
  }),
]);

const DESCRIPTION = [
  "Every install matching the filters (the same as GET /api/installs; no window means all time), oldest first, streamed: any size, in constant server memory.",
  "",
  `Columns / fields, in this order: ${EXPORT_COLUMNS.join(", ")} (the install record).`,
  "",
  "**csv** (default): RFC 4180, header row, CRLF line ends, UTF-8 without BOM. Cells with a quote, comma or line break are quoted (quotes doubled; line breaks inside error texts are kept). Null is an empty cell, booleans are true/false.",
  "Against formula injection in spreadsheet apps, a text cell that starts with `=`, `+`, `-`, `@`, tab or CR gets a leading `'`; so CSV is not a lossless round trip for such texts.",
  "",
  "**ndjson**: one JSON record per line, exactly as GET /api/installs/{random_id} returns it; the lossless format.",
].join("\n");

const stringBody = (example: string) => ({ schema: { type: "string" as const }, example });

export function exportRoutes(deps: { store: StoreReads; clock: () => number }) {
  const { store, clock } = deps;

  return new Elysia({ name: "export" }).get(
    "/api/export",
    ({ query }) => {
      const { format = DEFAULT_EXPORT_FORMAT, ...filters } = query;
      const now = clock();
      // Parameters are checked (QueryError -> 400) before any byte of the body is sent.
      // An export is a copy of the data: every kind unless asked for.
      const filter = toFilter({ ...filters, kind: filters.kind ?? "all" }, resolveWindow(filters, now, null));
      return new Response(exportStream(store.executionChunks(filter, { chunkRows: EXPORT_CHUNK_ROWS }), format), {
        headers: {
          "content-type": CONTENT_TYPES[format],
          "content-disposition": `attachment; filename="${exportFilename(now, format)}"`,
          "cache-control": "no-store",
        },
      });
    },
    {
      ...strictQuery(ExportQuery),
      detail: {
        tags: ["installs"],
        summary: "Export installs as CSV or NDJSON",
        description: DESCRIPTION,
        // Documented here rather than with `response`: the body is a stream, not a JSON value.
        responses: {
          200: {
            description: "the export, as an attachment",
            headers: {
              "content-disposition": {
                description: 'attachment; filename="installstats-<UTC time>.<format>"',
                schema: { type: "string" },
              },
            },
            content: {
              [CONTENT_TYPES.csv]: stringBody(`${EXPORT_COLUMNS.join(",")}\r\n...`),
              [CONTENT_TYPES.ndjson]: stringBody('{"random_id":"...",...}\n'),
            },
          },
          400: {
            description: "a filter or the format is invalid",
            content: { "application/json": { schema: ErrorBody as object } },
          },
        },
      },
    },
  );
}
