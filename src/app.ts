// Composes the route plugins into the HTTP application (called by the composition root, runtime.ts).
import { Elysia } from "elysia";
import type { Config } from "./config.ts";
import { errorMapping } from "./http/error-mapping.ts";
import { ingestRoutes } from "./ingest/ingest-routes.ts";
import type { GroupCommitWriter } from "./store/writer.ts";
import { adminRoutes } from "./maintenance/admin-routes.ts";
import { hardening, responseHeaders } from "./http/hardening.ts";
import type { Metrics } from "./http/metrics.ts";
import type { Maintenance } from "./maintenance/service.ts";
import { metricsRoutes } from "./http/metrics-routes.ts";
import { clientNetworkOf, createClientCosts, createRateLimiter, proxyMatcher } from "./http/rate-limit.ts";
import type { Server } from "bun";
import { healthRoutes } from "./http/health-routes.ts";
import type { Logger } from "./log.ts";
import { dataRoutes } from "./read/original/data-routes.ts";
import { exportRoutes } from "./read/native/export-routes.ts";
import { installsRoutes } from "./read/native/installs-routes.ts";
import { statsRoutes } from "./read/native/stats-routes.ts";
import { communityAnalysisRoutes } from "./read/community/analysis-routes.ts";
import { communityDashboardRoutes } from "./read/community/dashboard-routes.ts";
import { newDashboardRoutes } from "./read/community/new-dashboard-routes.ts";
import { scriptDetailRoutes } from "./read/community/script-detail-routes.ts";
import type { StoreReads } from "./store/contract/executions.ts";
import type { MaintenanceReads } from "./store/contract/maintenance.ts";
import type { RejectedReads } from "./store/contract/rejected.ts";
import type { StorageHealth } from "./store/engine.ts";
import { apiDocsRoutes, docsPageRoutes } from "./web/api-docs-routes.ts";
import { dashboardRoutes } from "./web/dashboard-routes.ts";
import { publicStatsRoutes } from "./read/native/public-stats-routes.ts";
import { publicPageRoutes } from "./web/public-page-routes.ts";
import type { Alerts } from "./alerts/service.ts";
import { alertRoutes } from "./alerts/alert-routes.ts";
import type { Relay } from "./relay/service.ts";
import { RelayJson, relayRoutes } from "./relay/relay-routes.ts";
import type { Issues } from "./issues/service.ts";
import { issueRoutes } from "./issues/issue-routes.ts";

export interface AppDeps {
  config: Config;
  store: StoreReads & MaintenanceReads & RejectedReads;
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
  const networkOf = clientNetworkOf(proxyMatcher(config.trustedProxies), {
    v4: config.rateLimitV4Prefix,
    v6: config.rateLimitV6Prefix,
  });
  const clientOf = (request: Request, server: Server<unknown> | null) =>
    networkOf(server?.requestIP(request)?.address ?? null, () => request.headers.get("x-forwarded-for"));
  const limiter = config.rateLimit > 0 ? createRateLimiter(config.rateLimit, config.rateBurst) : null;
  const costs = createClientCosts({ logBytes: config.logBudget, heldBytes: config.heldBudget });
  const ingest = ingestRoutes({
    writer,
    clock,
    maxBodyBytes: config.maxBodyBytes,
    normalize: config,
    metrics,
    limiter,
    costs,
    clientOf,
    headersFor: responseHeaders(config),
    log,
  });
  return (
    new Elysia({
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
      // Answers are checked against their schemas, not encoded through them: no response schema
      // transforms a value, but Elysia's t.Integer carries one (it reads numbers from text), so each
      // answer was walked once more, field by field (~9 % of /api/new's CPU over 300 log rows).
      encodeSchema: false,
      // Nor copied through them: Elysia's normalizing copy of every answer (to drop fields a schema
      // does not name) was ~13 % of an hourly series' CPU. That every answer names only documented
      // fields is a test (test/http/answers-carry-only-documented-fields.test.ts).
      normalize: false,
    })
      .onError(
        errorMapping({
          log,
          unknownPost: (request, path, server) => ingest.unknownPaths.record(request, path, clientOf(request, server)),
        }),
      )
      .use(hardening(config))
      .use(metricsRoutes(metrics))
      .use(apiDocsRoutes({ version }))
      .use(
        healthRoutes({
          version,
          writerStats: writer.stats,
          clock,
          storage: deps.storageHealth,
          relay: { schema: RelayJson, read: () => deps.relay.health().catch(() => null) },
        }),
      )
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
      .use(
        config.publicStats
          ? publicStatsRoutes({ store: deps.store, clock, minInstalls: config.publicMinInstalls })
          : new Elysia(),
      )
      .use(adminRoutes({ store: deps.store, writer, clock, maintenance: deps.maintenance }))
      .use(alertRoutes({ alerts: deps.alerts ?? null, clock }))
      .use(relayRoutes({ health: deps.relay.health, submit: (op) => writer.submit(op), clock }))
      .use(issueRoutes({ issues: deps.issues, clock }))
  );
}

/** Bun's own cap, above ours, so our 413 (with a JSON body) answers first; Bun's is only a backstop. */
const hardBodyLimit = (limit: number): number => Math.max(limit * 4, 1024 * 1024);
