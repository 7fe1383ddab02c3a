// The wire protocol: POST /upload and POST /upload/updatestatus (DESIGN.md sections 1-2).
import { Elysia, t } from "elysia";
import { ErrorBody, RETRY_AFTER_SECONDS, errorBody, serverFault, type ErrorCode } from "../http/errors.ts";
import type { Logger } from "../log.ts";
import type { Endpoint, WriteOp, WriteResult } from "../store/contract.ts";
import type { RejectReason } from "../store/sqlite/schema.ts";
import { OutcomeSchema } from "../read/record.ts";
import { parseLenientJson } from "./lenient-json.ts";
import { normalizeStart, normalizeUpdate, type NormalizeOptions } from "../domain/normalize.ts";
import { readBody } from "./read-body.ts";
import type { GroupCommitWriter } from "../store/writer.ts";
import type { Server } from "bun";
import type { Metrics } from "../http/metrics.ts";
import type { RateLimiter } from "../http/rate-limit.ts";

const PATHS = { upload: "/upload", updatestatus: "/upload/updatestatus" } as const satisfies Record<Endpoint, string>;

export interface IngestDeps {
  writer: GroupCommitWriter;
  normalize: NormalizeOptions;
  maxBodyBytes: number;
  clock: () => number;
  metrics: Metrics;
  /** Per-client limit; null = none. */
  limiter: RateLimiter | null;
  /** The address a request counts against (proxy-aware). */
  clientOf: (request: Request, server: Server<unknown> | null) => string;
  /** Security and CORS headers (ops/hardening.ts), in a new object the caller may add to. */
  headersFor: (request: Request) => Record<string, string>;
  log: Logger;
}

export const Accepted = t.Object(
  {
    result: t.Union([t.Literal("created"), t.Literal("duplicate"), t.Literal("updated"), t.Literal("held")]),
    random_id: t.String(),
    duplicate: t.Optional(t.Literal(true)),
    outcome: t.Optional(OutcomeSchema),
    repaired: t.Boolean({ description: "the body was not valid JSON and was repaired; the raw body is in the rejected-reports log" }),
  },
  { title: "Accepted" },
);

const StartReportDoc = t.Object(
  {
    random_id: t.String({ description: "client-generated id (a UUID in practice)" }),
    type: t.String({ description: "lxc, vm, turnkey, pve, addon or tool" }),
    ct_type: t.Optional(t.Number({ description: "container type code; 2 for VMs" })),
    disk_size: t.Optional(t.Union([t.Number(), t.String()], { description: 'GiB; "32G" and "" accepted' })),
    core_count: t.Optional(t.Number()),
    ram_size: t.Optional(t.Union([t.Number(), t.String()], { description: "MiB" })),
    os_type: t.Optional(t.String()),
    os_version: t.Optional(t.String()),
    disableip6: t.Optional(t.String()),
    nsapp: t.Optional(t.String({ description: "application being installed" })),
    method: t.Optional(t.String()),
    pve_version: t.Optional(t.String({ description: 'host version; "not found" when unknown; alias host_version' })),
    status: t.Optional(t.String({ description: "installing" })),
  },
  { title: "StartReport" },
);

const StatusUpdateDoc = t.Object(
  {
    random_id: t.String(),
    status: t.String({ description: "done, failed, ... (lowercased)" }),
    error: t.Optional(t.String({ description: "free text; IP addresses are masked" })),
  },
  { title: "StatusUpdate" },
);

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

type Reply = { status: 200 | 201 | 202; body: typeof Accepted.static } | { status: 400 | 409 | 413 | 422; body: ErrorBody };

function accepted(result: WriteResult, randomId: string, repaired: boolean): Reply {
  switch (result.kind) {
    case "created":
      return { status: 201, body: { result: "created", random_id: randomId, outcome: result.outcome, repaired } };
    case "duplicate":
      return { status: 200, body: { result: "duplicate", random_id: randomId, duplicate: true, repaired } };
    case "updated":
      return { status: 200, body: { result: "updated", random_id: randomId, outcome: result.outcome, repaired } };
    case "held":
      return { status: 202, body: { result: "held", random_id: randomId, repaired } };
    case "conflict":
      return {
        status: 409,
        body: errorBody("already_final", `install ${randomId} already has a final status (${result.outcome}); update not applied`, "status"),
      };
    case "logged":
    case "deleted":
    case "expired":
    case "forgotten":
    case "marked":
    case "folded":
      throw new Error(`a report write cannot answer '${result.kind}'`);
  }
}

export function ingestRoutes(deps: IngestDeps) {
  const { writer, normalize, maxBodyBytes, clock, metrics, limiter, clientOf, headersFor, log } = deps;

  async function reject(
    endpoint: Endpoint,
    httpStatus: 400 | 413 | 422,
    reason: RejectReason & ErrorCode,
    message: string,
    body: Uint8Array,
    field: string | null = null,
    randomId: string | null = null,
  ): Promise<Reply> {
    await writer.submit({ kind: "reject", at: clock(), rejection: { endpoint, reason, httpStatus, field, message, randomId, body } });
    metrics.rejected.inc({ reason });
    return { status: httpStatus, body: errorBody(reason, message, field) };
  }

  async function ingest(endpoint: Endpoint, request: Request): Promise<Reply> {
    const read = await readBody(request, maxBodyBytes);
    if (!read.ok) {
      const size = read.size === null ? "a chunked body" : `${read.size} bytes`;
      return reject(endpoint, 413, "payload_too_large", `body is larger than the limit of ${maxBodyBytes} bytes (${size})`, new Uint8Array(0));
    }
    const raw = read.bytes;
    const parsed = parseLenientJson(raw);
    if (!parsed.ok) return reject(endpoint, 400, "invalid_json", parsed.message, raw);
    const guessId = typeof parsed.value.random_id === "string" ? parsed.value.random_id.slice(0, 128) : null;
    const received = { raw, repairs: parsed.repairs, at: clock() };
    let op: WriteOp;
    if (endpoint === "upload") {
      const report = normalizeStart(parsed.value, normalize);
      if (!report.ok) return reject(endpoint, 422, "invalid_field", report.message, raw, report.field, guessId);
      op = { kind: "start", report: report.value, ...received };
    } else {
      const update = normalizeUpdate(parsed.value, normalize);
      if (!update.ok) return reject(endpoint, 422, "invalid_field", update.message, raw, update.field, guessId);
      op = { kind: "update", update: update.value, ...received };
    }
    const randomId = op.kind === "start" ? op.report.randomId : op.update.randomId;
    const reply = accepted(await writer.submit(op), randomId, parsed.repairs.length > 0);
    if (parsed.repairs.length > 0) metrics.rejected.inc({ reason: "repaired" });
    if (reply.status === 409) metrics.rejected.inc({ reason: "already_final" });
    return reply;
  }

  /** Rate limit, then ingest; every answer is timed, and every failure answered in the one error shape. */
  async function respond(endpoint: Endpoint, request: Request, server: Server<unknown> | null): Promise<Response> {
    const started = performance.now();
    const headers = headersFor(request);
    headers["content-type"] = "application/json";
    let status: number;
    let body: Reply["body"] | ErrorBody;
    try {
      const verdict = limiter?.take(clientOf(request, server), clock());
      if (verdict && !verdict.ok) {
        metrics.rateLimited.inc();
        status = 429;
        headers["retry-after"] = String(verdict.retryAfterS);
        body = errorBody("rate_limited", `too many reports from this address; retry in ${verdict.retryAfterS} s`);
      } else {
        ({ status, body } = await ingest(endpoint, request));
        metrics.ingestSeconds.observe((performance.now() - started) / 1000, { endpoint });
      }
    } catch (e) {
      const fault = serverFault(e, PATHS[endpoint], log);
      ({ status, body } = fault);
      Object.assign(headers, fault.headers);
    }
    return new Response(JSON.stringify(body), { status, headers });
  }

  /**
   * The hot path, mounted as Bun routes: Elysia's per-request lifecycle cost ~12 µs per report
   * (a third of the no-storage floor, docs/decisions.md). Counted here since Elysia's hooks do not run.
   */
  const native = (endpoint: Endpoint) => ({
    POST: async (request: Request, server: Server<unknown>) => {
      const response = await respond(endpoint, request, server);
      metrics.requests.inc({ route: PATHS[endpoint], method: "POST", status: String(response.status) });
      return response;
    },
  });

  const hook = (summary: string, description: string, doc: typeof StartReportDoc | typeof StatusUpdateDoc) => ({
    parse: "none" as const,
    response: responses,
    detail: {
      tags: ["ingest"],
      summary,
      description: `${description}\n\nBodies built by bash string interpolation are repaired when their intent is unambiguous; anything not applied as sent is kept raw in the rejected-reports log. Storage errors answer 503 with Retry-After: ${RETRY_AFTER_SECONDS}.`,
      requestBody: { required: true, content: { "application/json": { schema: doc as unknown as SchemaObject } } },
    },
  });

  // The Elysia routes document the endpoints (OpenAPI) and answer in-process requests (app.handle)
  // and path variants; both mounts answer with the same `respond`.
  const plugin = new Elysia({ name: "ingest" })
    .post(
      PATHS.upload,
      ({ request, server }) => respond("upload", request, server),
      hook("Installation started", "201 for a new random_id, 200 with duplicate:true when it is already stored (the stored record is unchanged).", StartReportDoc),
    )
    .post(
      PATHS.updatestatus,
      ({ request, server }) => respond("updatestatus", request, server),
      hook("Installation status update", "200 when applied, 202 when held until the start report arrives, 409 when the install already has a final status.", StatusUpdateDoc),
    );
  return { plugin, native: { [PATHS.upload]: native("upload"), [PATHS.updatestatus]: native("updatestatus") } };
}
