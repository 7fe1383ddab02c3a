// The wire protocols: POST /upload, POST /upload/updatestatus and POST /telemetry (docs/protocol.md).
import type { ObjectOptions, TSchema } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import type { Server } from "bun";
import { kindOfType } from "../domain/execution.ts";
import type { NormalizeOptions } from "../domain/normalize.ts";
import { requiredIn, sentDocOf, sentIn, wireName, type SentField } from "../domain/fields.ts";
import type { Endpoint, Rejection } from "../domain/rejection.ts";
import { ErrorBody, RETRY_AFTER_SECONDS, errorBody, serverFault } from "../http/errors.ts";
import type { CounterSeries, HistogramSeries, Metrics } from "../http/metrics.ts";
import type { ClientCosts, Network, RateLimiter } from "../http/rate-limit.ts";
import { OutcomeSchema } from "../http/schemas.ts";
import type { Logger } from "../log.ts";
import type { ResultFor } from "../store/contract/store.ts";
import { RequestAbortedError, type GroupCommitWriter } from "../store/writer.ts";
import { intake, type ReportOp } from "./pipeline.ts";
import { readBody } from "./read-body.ts";
import { REFUSAL_STATUS, RESULT_STATUS } from "./status.ts";
import { unknownPathTracker } from "./unknown-path.ts";

const PATHS = {
  upload: "/upload",
  updatestatus: "/upload/updatestatus",
  telemetry: "/telemetry",
} as const satisfies Record<Endpoint, string>;

export interface IngestDeps {
  writer: GroupCommitWriter;
  normalize: NormalizeOptions;
  maxBodyBytes: number;
  clock: () => number;
  metrics: Metrics;
  /** Per-client limit; null = none. */
  limiter: RateLimiter | null;
  /** Each client network's share of the rejected-reports log and of held reports. */
  costs: ClientCosts;
  /** The network a request counts against (proxy-aware); null when exempt (in-process, this host). */
  clientOf: (request: Request, server: Server<unknown> | null) => Network | null;
  /** Security and CORS headers (http/hardening.ts), in a new object the caller may add to. */
  headersFor: (request: Request) => Record<string, string>;
  log: Logger;
}

const Accepted = t.Object(
  {
    result: t.Union([t.Literal("created"), t.Literal("duplicate"), t.Literal("updated"), t.Literal("held")]),
    random_id: t.String(),
    execution_id: t.String({ description: "the execution the report was about (= random_id for /upload)" }),
    duplicate: t.Optional(t.Literal(true)),
    outcome: t.Optional(OutcomeSchema),
    repaired: t.Boolean({
      description: "the body was not valid JSON and was repaired; the raw body is in the rejected-reports log",
    }),
  },
  { title: "Accepted" },
);

/** A field as the clients send it, for the docs (the routes read bodies themselves, normalize.ts checks them). */
function sentSchema(f: SentField, endpoint: Endpoint): TSchema {
  const description = sentDocOf(f, endpoint);
  let schema: TSchema;
  switch (f.kind) {
    case "id":
      schema = t.String({ minLength: f.bounds[0], maxLength: f.bounds[1], description });
      break;
    case "integer":
      schema = t.Integer({ minimum: f.bounds[0], maximum: f.bounds[1], description });
      break;
    case "size":
      schema = t.Union([t.Number({ minimum: f.bounds[0], maximum: f.bounds[1] }), t.String()], {
        description: `${description}; "32G", "2048M" and "" accepted`,
      });
      break;
    case "bool":
      schema = t.Boolean({ description });
      break;
    default:
      schema = t.String({ description });
  }
  return requiredIn(f, endpoint) ? schema : t.Optional(schema);
}

/** The body of an endpoint as the clients send it: the fields in their order (domain/fields.ts `sent`). */
function bodyDoc(endpoint: Endpoint, options: ObjectOptions) {
  const props: Record<string, TSchema> = {};
  // Rows of different payload versions sharing a body key (domain/fields.ts `wire`): the first describes it.
  for (const f of sentIn(endpoint)) props[wireName(f)] ??= sentSchema(f, endpoint);
  return t.Object(props, options);
}

const StartReportDoc = bodyDoc("upload", { title: "StartReport" });
const StatusUpdateDoc = bodyDoc("updatestatus", { title: "StatusUpdate" });
const TelemetryDoc = bodyDoc("telemetry", {
  title: "TelemetryReport",
  additionalProperties: true,
  description: "Unknown fields are kept in the record's `extra`.",
});

// TypeBox schemas are JSON Schema; only their TypeScript types differ from openapi-types'.
type SchemaObject = { type: "object" };

const responses = {
  200: Accepted,
  201: Accepted,
  202: Accepted,
  400: ErrorBody,
  409: ErrorBody,
  413: ErrorBody,
  422: ErrorBody,
  429: ErrorBody,
  503: ErrorBody,
};

type UnknownPaths = ReturnType<typeof unknownPathTracker>;

type Reply =
  | { status: 200 | 201 | 202; body: typeof Accepted.static }
  | { status: 400 | 409 | 413 | 422; body: ErrorBody };

function accepted(
  result: ResultFor<ReportOp>,
  ids: { random_id: string; execution_id: string },
  repaired: boolean,
): Reply {
  const randomId = ids.random_id;
  switch (result.kind) {
    case "created":
      return { status: RESULT_STATUS.created, body: { result: "created", ...ids, outcome: result.outcome, repaired } };
    case "duplicate":
      return { status: RESULT_STATUS.duplicate, body: { result: "duplicate", ...ids, duplicate: true, repaired } };
    case "updated":
      return { status: RESULT_STATUS.updated, body: { result: "updated", ...ids, outcome: result.outcome, repaired } };
    case "held":
      return { status: RESULT_STATUS.held, body: { result: "held", ...ids, repaired } };
    case "already-final":
      return {
        status: RESULT_STATUS["already-final"],
        body: errorBody(
          "already_final",
          `install ${randomId} already has a final status (${result.outcome}); update not applied`,
          "status",
        ),
      };
  }
}

// Every write carries its request's signal: a request aborted before its write is stored (its
// client gone, or Bun closing a pipelined connection: scripts/repro/pipelining.ts) stores nothing.
async function reject(
  deps: IngestDeps,
  rejection: Rejection & { reason: "invalid_json" | "invalid_field" | "payload_too_large" },
  client: Network | null,
  signal: AbortSignal,
): Promise<Reply> {
  const { clock, costs, writer, metrics } = deps;
  const at = clock();
  // Past its network's share of the log, a body is kept by its head (the entry stays).
  const headOnly = rejection.body.byteLength > 0 && !costs.log.take(client, rejection.body.byteLength, at);
  await writer.submit({ kind: "reject", at, rejection, ...(headOnly ? { headOnly } : {}) }, signal);
  if (headOnly) metrics.clientShareUsed.inc({ share: "log" });
  metrics.rejected.inc({ reason: rejection.reason });
  const status = REFUSAL_STATUS[rejection.reason] as 400 | 413 | 422;
  return { status, body: errorBody(rejection.reason, rejection.message, rejection.field) };
}

/** One report: its body read, taken in (pipeline.ts), written, and answered. */
async function ingest(deps: IngestDeps, endpoint: Endpoint, request: Request, client: Network | null): Promise<Reply> {
  const { maxBodyBytes, clock, normalize, costs, writer, metrics } = deps;
  const read = await readBody(request, maxBodyBytes);
  if (!read.ok) {
    const size = read.size === null ? "a chunked body" : `${read.size} bytes`;
    const message = `body is larger than the limit of ${maxBodyBytes} bytes (${size})`;
    return reject(
      deps,
      { endpoint, reason: "payload_too_large", field: null, message, randomId: null, body: new Uint8Array(0) },
      client,
      request.signal,
    );
  }
  const taken = intake(endpoint, read.bytes, clock(), normalize);
  if (!taken.ok) return reject(deps, taken.rejection, client, request.signal);
  const repaired = taken.op.repairs.length > 0;
  const bytes = taken.op.raw.byteLength;
  // A client past its network's shares: what it makes the store log keeps its head only, and a
  // final report before its start is applied on its own at once (nothing is dropped either way).
  const headOnly = repaired ? !costs.log.take(client, bytes, taken.op.at) : !costs.log.has(client, taken.op.at);
  const holdable = costs.held.has(client, taken.op.at);
  const op = { ...taken.op, ...(headOnly ? { headOnly } : {}), ...(holdable ? {} : { holdable }) };
  const result = await writer.submit(op, request.signal);
  if (headOnly && (repaired || result.kind === "already-final")) metrics.clientShareUsed.inc({ share: "log" });
  if (result.kind === "held") costs.held.charge(client, bytes, op.at);
  else if (result.kind === "already-final") costs.log.charge(client, bytes, op.at);
  // An install's final report created on its own: it came before its start and was not held (tools and addons are never held).
  if (
    !holdable &&
    result.kind === "created" &&
    op.report.outcome !== "in_progress" &&
    kindOfType(op.report.fields?.type ?? "") === "install"
  )
    metrics.clientShareUsed.inc({ share: "held" });
  const reply = accepted(result, { random_id: op.report.randomId, execution_id: op.report.executionId }, repaired);
  if (repaired) metrics.rejected.inc({ reason: "repaired" });
  if (result.kind === "already-final") metrics.rejected.inc({ reason: "already_final" });
  return reply;
}

/** Rate limit, then ingest; every answer is timed, and every failure answered in the one error shape. */
async function respond(
  deps: IngestDeps,
  meters: Meters,
  request: Request,
  server: Server<unknown> | null,
): Promise<Response> {
  const { headersFor, clientOf, limiter, clock, metrics, log } = deps;
  const { endpoint } = meters;
  const started = performance.now();
  const headers = headersFor(request);
  headers["content-type"] = "application/json";
  let status: number;
  let body: Reply["body"] | ErrorBody;
  try {
    const client = clientOf(request, server);
    const verdict = limiter?.take(client, clock());
    if (verdict && !verdict.ok) {
      metrics.rateLimited.inc({ family: verdict.family });
      status = 429;
      headers["retry-after"] = String(verdict.retryAfterS);
      body = errorBody("rate_limited", `too many reports from this network; retry in ${verdict.retryAfterS} s`);
    } else {
      ({ status, body } = await ingest(deps, endpoint, request, client));
      meters.took((performance.now() - started) / 1000);
    }
  } catch (e) {
    if (e instanceof RequestAbortedError || request.signal.aborted) {
      // Nobody is left to answer; nothing of this request was stored (see reject above).
      log.info("request aborted before its report was stored", { path: PATHS[endpoint], stored: false });
      return new Response(null, { status: 499 });
    }
    const fault = serverFault(e, PATHS[endpoint], log);
    ({ status, body } = fault);
    Object.assign(headers, fault.headers);
  }
  return new Response(JSON.stringify(body), { status, headers });
}

/**
 * An endpoint's series in /metrics, kept once made: naming a series' labels for every report
 * (a key built and sorted) cost more than counting in it.
 */
class Meters {
  private seconds: HistogramSeries | null = null;
  private readonly byStatus = new Map<number, CounterSeries>();
  constructor(
    private readonly metrics: Metrics,
    readonly endpoint: Endpoint,
  ) {}
  took(seconds: number): void {
    (this.seconds ??= this.metrics.ingestSeconds.series({ endpoint: this.endpoint })).observe(seconds);
  }
  answered(status: number): void {
    let requests = this.byStatus.get(status);
    if (!requests) {
      requests = this.metrics.requests.series({ route: PATHS[this.endpoint], method: "POST", status: String(status) });
      this.byStatus.set(status, requests);
    }
    requests.inc();
  }
}

/**
 * The hot path, mounted as Bun routes: Elysia's per-request lifecycle cost ~12 µs per report
 * (a third of the no-storage floor, docs/decisions/2026-11-22-ingestion-on-bun-routes.md). Counted here since Elysia's hooks do not run.
 */
function nativeRoute(deps: IngestDeps, meters: Meters) {
  return {
    POST: async (request: Request, server: Server<unknown>) => {
      const response = await respond(deps, meters, request, server);
      meters.answered(response.status);
      return response;
    },
  };
}

const hook = (
  summary: string,
  description: string,
  doc: typeof StartReportDoc | typeof StatusUpdateDoc | typeof TelemetryDoc,
) => ({
  parse: "none" as const,
  response: responses,
  detail: {
    tags: ["ingest"],
    summary,
    description: `${description}\n\nBodies built by bash string interpolation are repaired when their intent is unambiguous; anything not applied as sent is kept raw in the rejected-reports log. Storage errors answer 503 with Retry-After: ${RETRY_AFTER_SECONDS}.`,
    requestBody: { required: true, content: { "application/json": { schema: doc as unknown as SchemaObject } } },
  },
});

const UnknownPathList = t.Object(
  {
    paths: t.Array(
      t.Object({
        path: t.String(),
        count: t.Integer(),
        first_seen: t.String({ format: "date-time" }),
        last_seen: t.String({ format: "date-time" }),
      }),
    ),
  },
  { title: "UnknownPaths" },
);

/**
 * The Elysia routes document the endpoints (OpenAPI) and answer in-process requests (app.handle)
 * and path variants; both mounts answer with the same `respond`.
 */
function ingestPlugin(deps: IngestDeps, meters: Record<Endpoint, Meters>, unknownPaths: UnknownPaths) {
  return new Elysia({ name: "ingest" })
    .post(
      PATHS.upload,
      ({ request, server }) => respond(deps, meters.upload, request, server),
      hook(
        "Installation started",
        "201 for a new random_id, 200 with duplicate:true when it is already stored (the stored record is unchanged).",
        StartReportDoc,
      ),
    )
    .post(
      PATHS.updatestatus,
      ({ request, server }) => respond(deps, meters.updatestatus, request, server),
      hook(
        "Installation status update",
        "200 when applied, 202 when held until the start report arrives, 409 when the install already has a final status.",
        StatusUpdateDoc,
      ),
    )
    .post(
      PATHS.telemetry,
      ({ request, server }) => respond(deps, meters.telemetry, request, server),
      hook(
        "Any report of the current clients (payload v1 and v2)",
        "Start (installing), progress (validation, configuring) and final reports (success, failed, aborted, unknown) of one execution, and one-shot tool and addon reports. 201 for a new execution; 200 when it changed one, and with duplicate:true for a report that changes nothing (the client retries every non-2xx, so a repeated report is never a conflict); 202 for an install's final report that came before its start (held until it comes).",
        TelemetryDoc,
      ),
    )
    .get("/api/ingest/unknown-paths", () => ({ paths: unknownPaths.list() }), {
      response: { 200: UnknownPathList },
      detail: {
        tags: ["ingest"],
        summary: "POSTs to unknown paths since start",
        description:
          "A script pointed at a wrong URL gets 404; each such path is counted here (and in /metrics), and its bodies are kept, rate-limited, in the rejected-reports log (reason unknown_path).",
      },
    });
}

export function ingestRoutes(deps: IngestDeps) {
  const { writer, clock, metrics, log, maxBodyBytes, costs } = deps;
  const unknownPaths = unknownPathTracker({ writer, clock, metrics, log, maxBodyBytes, paths: PATHS, costs });
  const meters: Record<Endpoint, Meters> = {
    upload: new Meters(metrics, "upload"),
    updatestatus: new Meters(metrics, "updatestatus"),
    telemetry: new Meters(metrics, "telemetry"),
  };
  return {
    plugin: ingestPlugin(deps, meters, unknownPaths),
    unknownPaths,
    native: {
      [PATHS.upload]: nativeRoute(deps, meters.upload),
      [PATHS.updatestatus]: nativeRoute(deps, meters.updatestatus),
      [PATHS.telemetry]: nativeRoute(deps, meters.telemetry),
    },
  };
}
