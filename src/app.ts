// Composes the route plugins into the HTTP application (called by the composition root, runtime.ts).
import { Elysia } from "elysia";
import type { Config } from "./config.ts";
import { errorBody, serverFault } from "./http/errors.ts";
import { ingestRoutes } from "./ingest/ingest-routes.ts";
import type { GroupCommitWriter } from "./store/writer.ts";
import { adminRoutes } from "./maintenance/admin-routes.ts";
import { hardening, responseHeaders } from "./http/hardening.ts";
import type { Metrics } from "./http/metrics.ts";
import type { Maintenance } from "./maintenance/service.ts";
import { metricsRoutes } from "./http/metrics-routes.ts";
import { clientAddress, clientNetwork, createClientCosts, createRateLimiter, proxyMatcher } from "./http/rate-limit.ts";
import type { Server } from "bun";
import { healthRoutes } from "./http/health-routes.ts";
import type { Logger } from "./log.ts";
import { dataRoutes } from "./read/original/data-routes.ts";
import { exportRoutes } from "./read/native/export-routes.ts";
import { QueryError } from "./read/query.ts";
import { installsRoutes } from "./read/native/installs-routes.ts";
import { statsRoutes } from "./read/native/stats-routes.ts";
import { communityAnalysisRoutes } from "./read/community/analysis-routes.ts";
import { communityDashboardRoutes } from "./read/community/dashboard-routes.ts";
import { newDashboardRoutes } from "./read/community/new-dashboard-routes.ts";
import { scriptDetailRoutes } from "./read/community/script-detail-routes.ts";
import type { MaintenanceReads, StoreReads } from "./store/contract.ts";
import type { StorageHealth } from "./store/engine.ts";
import { apiDocsRoutes, docsPageRoutes } from "./web/api-docs-routes.ts";
import { dashboardRoutes } from "./web/dashboard-routes.ts";
import { publicStatsRoutes } from "./read/native/public-stats-routes.ts";
import { publicPageRoutes } from "./web/public-page-routes.ts";
import type { Alerts } from "./alerts/service.ts";
import { alertRoutes } from "./alerts/alert-routes.ts";
import type { Relay } from "./relay/service.ts";
import { relayRoutes } from "./relay/relay-routes.ts";
import type { Issues } from "./issues/service.ts";
import { issueRoutes } from "./issues/issue-routes.ts";

export interface AppDeps {
  config: Config;
  store: StoreReads & MaintenanceReads;
  writer: GroupCommitWriter;
  clock: () => number;
  version: string;
  log: Logger;
  metrics: Metrics;
  maintenance: Maintenance;
  /** The engine's view of its storage (files, damage, integrity check, budgets) for /healthz. */
  storageHealth?: () => Promise<StorageHealth>;
  /** Null without an alerts file (the alert routes then say so). */
  alerts?: Alerts | null;
  /** The relay to an upstream collector: its state (/healthz, admin API). */
  relay: Pick<Relay, "health">;
  /** Issues opened in the script collection's tracker from error signatures (admin API). */
  issues: Issues;
}

export function createApp(deps: AppDeps) {
  const { config, writer, clock, version, log, metrics } = deps;
  const trusted = proxyMatcher(config.trustedProxies);
  const prefixes = { v4: config.rateLimitV4Prefix, v6: config.rateLimitV6Prefix };
  const clientOf = (request: Request, server: Server<unknown> | null) =>
    clientNetwork(clientAddress(server?.requestIP(request)?.address ?? null, request.headers.get("x-forwarded-for"), trusted), prefixes);
  const limiter = config.rateLimit > 0 ? createRateLimiter(config.rateLimit, config.rateBurst) : null;
  const costs = createClientCosts({ logBytes: config.logBudget, heldBytes: config.heldBudget });
  const ingest = ingestRoutes({
    writer, clock, maxBodyBytes: config.maxBodyBytes, normalize: config, metrics, limiter, costs, clientOf, headersFor: responseHeaders(config), log,
  });
  return new Elysia({
    serve: {
      maxRequestBodySize: hardBodyLimit(config.maxBodyBytes),
      // Bun answers these paths itself (the pages, with their own handlers and headers; ingestion);
      // anything else reaches Elysia.
      routes: {
        ...dashboardRoutes(responseHeaders(config)),
        ...docsPageRoutes({ version, headersFor: responseHeaders(config) }),
        ...(config.publicStats ? publicPageRoutes(responseHeaders(config)) : {}),
        ...ingest.native,
      },
      development: false,
      // Elysia's default shares the port with any other process on it: a second server started by
      // mistake would silently take half of the reports into another database.
      reusePort: false,
    },
  })
    .onError(async ({ code, error, set, path, request, server }) => {
      // Every error leaves in the one shape, {error, message, field}; no stack traces reach clients.
      // A bad parameter of the URL (query string, path) is 400; a bad field of a body is 422.
      set.headers["content-type"] = "application/json";
      if (error instanceof QueryError) {
        set.status = 400;
        return errorBody("invalid_field", error.message, error.field);
      }
      switch (code) {
        case "NOT_FOUND":
          if ((request.method === "GET" || request.method === "HEAD") && path.length > 1 && path.endsWith("/")) {
            // Elysia strips trailing slashes from the routes it hands Bun, so "/openapi/" (as people
            // type it) would be a 404: send them to the path without it.
            const to = path.replace(/\/+$/, "") || "/";
            set.status = 308;
            set.headers.location = to + new URL(request.url).search;
            return errorBody("not_found", `no route for ${path}; see ${to}`);
          }
          set.status = 404;
          if (request.method === "POST") await ingest.unknownPaths.record(request, path, clientOf(request, server));
          return errorBody("not_found", `no route for ${path}${request.method === "POST" ? "; reports go to /telemetry (current scripts) or /upload and /upload/updatestatus (old ones)" : ""}`);
        case "PARSE":
          set.status = 400;
          return errorBody("invalid_json", "body is not valid JSON");
        case "VALIDATION": {
          if (error.type === "response") {
            // Our answer broke its own schema: a bug, not the client's fault.
            const fault = serverFault(error, path, log);
            set.status = fault.status;
            return fault.body;
          }
          const inUrl = error.type === "query" || error.type === "params";
          set.status = inUrl ? 400 : 422;
          const issue = error.valueError;
          const field = issue?.path.replace(/^\//, "").replaceAll("/", ".") || undefined;
          return errorBody("invalid_field", issue ? describeIssue(field, issue.schema as SchemaLike, issue.message) : "request does not match the schema", field);
        }
        default: {
          if (request.signal.aborted) {
            // The client went away mid-request (an aborted body reads as an error with no text): not a fault of ours.
            log.info("request aborted by the client", { path, method: request.method });
            set.status = 499;
            return errorBody("internal", "request aborted by the client");
          }
          const fault = serverFault(error, path, log);
          set.status = fault.status;
          Object.assign(set.headers, fault.headers);
          return fault.body;
        }
      }
    })
    .use(hardening(config))
    .use(metricsRoutes(metrics))
    .use(apiDocsRoutes({ version }))
    .use(healthRoutes({ version, writerStats: writer.stats, clock, storage: deps.storageHealth, relay: () => deps.relay.health().catch(() => null) }))
    .use(ingest.plugin)
    .use(installsRoutes({ store: deps.store, clock }))
    .use(statsRoutes({ store: deps.store, clock }))
    .use(dataRoutes({ store: deps.store, clock }))
    .use(communityDashboardRoutes({ store: deps.store, clock }))
    .use(communityAnalysisRoutes({ store: deps.store, clock }))
    .use(newDashboardRoutes({ store: deps.store, clock }))
    .use(scriptDetailRoutes({ store: deps.store, clock }))
    .use(exportRoutes({ store: deps.store, clock }))
    // Opt-in: without --public-stats the paths do not exist (404), so nothing is published by accident.
    .use(config.publicStats ? publicStatsRoutes({ store: deps.store, clock, minInstalls: config.publicMinInstalls }) : new Elysia())
    .use(adminRoutes({ store: deps.store, writer, clock, maintenance: deps.maintenance }))
    .use(alertRoutes({ alerts: deps.alerts ?? null, clock }))
    .use(relayRoutes({ health: deps.relay.health, submit: (op) => writer.submit(op), clock }))
    .use(issueRoutes({ issues: deps.issues, clock }));
}

interface SchemaLike {
  const?: unknown;
  anyOf?: SchemaLike[];
  enum?: unknown[];
  type?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
}

/** A schema failure in words that name the field and what it accepts ("by must be one of ..."), not "Expected union value". */
function describeIssue(field: string | undefined, schema: SchemaLike | undefined, fallback: string): string {
  const name = field ?? "value";
  const literals = schema?.anyOf?.every((s) => s.const !== undefined) ? schema.anyOf.map((s) => String(s.const)) : schema?.enum?.map(String);
  if (literals) return `${name} must be one of ${literals.join(", ")}`;
  const number = schema?.anyOf?.find((s) => s.type === "number" || s.type === "integer") ?? (schema?.type === "number" || schema?.type === "integer" ? schema : undefined);
  if (number) {
    const range = number.minimum !== undefined && number.maximum !== undefined ? ` from ${number.minimum} to ${number.maximum}` : number.minimum !== undefined ? ` of at least ${number.minimum}` : number.maximum !== undefined ? ` of at most ${number.maximum}` : "";
    return `${name} must be a ${number.type === "integer" ? "whole " : ""}number${range}`;
  }
  if (schema?.type === "string" && (schema.minLength !== undefined || schema.maxLength !== undefined)) return `${name} must be ${schema.minLength ?? 0} to ${schema.maxLength ?? "any number of"} characters`;
  return `${name}: ${fallback}`;
}

/** Bun's own cap, above ours, so our 413 (with a JSON body) answers first; Bun's is only a backstop. */
const hardBodyLimit = (limit: number): number => Math.max(limit * 4, 1024 * 1024);

export type App = ReturnType<typeof createApp>;

/**
 * Composes every route, one per turn of the event loop. Elysia composes routes lazily, and under
 * load on a live server the lazily composed handlers were composed again and again (12% of CPU in
 * its analysis); composing them all at start-up (`precompile`) cost ~275 ms before listening, so
 * it runs just after, in steps, so that requests arriving meanwhile are answered between them.
 */
export function composeRoutes(app: App): Promise<void> {
  const routes = [...app.router.history];
  return new Promise((done) => {
    const step = () => {
      const route = routes.shift();
      if (!route) return done();
      (route as { compile?: () => unknown }).compile?.();
      setImmediate(step);
    };
    step();
  });
}
