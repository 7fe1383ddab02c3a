// GET /metrics (Prometheus text format) and the per-request counter behind it. Gauges that need
// the database or the read side are registered by the composition root (src/runtime.ts).
import { Elysia } from "elysia";
import type { Metrics } from "./metrics.ts";

export function metricsRoutes(metrics: Metrics) {
  return new Elysia({ name: "metrics" })
    .onAfterResponse({ as: "global" }, ({ request, route, set, responseValue }) => {
      // A handler that answers with a whole Response (ingestion) sets its status there.
      const status = responseValue instanceof Response ? responseValue.status : (set.status ?? 200);
      metrics.requests.inc({ route: route || "unmatched", method: request.method, status: String(status) });
    })
    .get(
      "/metrics",
      async () =>
        new Response(await metrics.registry.render(), {
          headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
        }),
      {
        detail: {
          tags: ["ops"],
          summary: "Prometheus metrics",
          description:
            "Requests, ingest latency, batch sizes, rejected reports by reason, rate limiting, database size, installs by outcome, scheduled jobs.",
        },
      },
    );
}
