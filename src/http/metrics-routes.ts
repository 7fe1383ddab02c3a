// GET /metrics (Prometheus text format) and the per-request counter behind it.
import { statSync } from "node:fs";
import { Elysia } from "elysia";
import type { StoreReads } from "../store/contract.ts";
import { createStats } from "../read/stats.ts";
import { HOUR } from "../domain/rollup.ts";
import { Gauge, type Metrics } from "./metrics.ts";

const fileSize = (path: string): number => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

export function metricsRoutes(deps: { metrics: Metrics; store: StoreReads; dbPath: string; clock: () => number; started: number }) {
  const { metrics, store, dbPath, clock } = deps;
  const stats = createStats(store);
  const { registry } = metrics;
  registry.add(new Gauge("installstats_database_bytes", "Size of the database file and its WAL", () => [
    { labels: { file: "db" }, value: fileSize(dbPath) },
    { labels: { file: "wal" }, value: fileSize(`${dbPath}-wal`) },
  ]));
  registry.add(new Gauge("installstats_installs", "Installs stored, by outcome (all time, from rollups)", () => {
    const span = store.recordSpan();
    if (!span) return [];
    const window = { from: span.first - (span.first % HOUR), to: Math.max(clock(), span.last) - (Math.max(clock(), span.last) % HOUR) + HOUR };
    const s = stats.summary({}, window);
    return (["success", "failed", "aborted", "in_progress", "unknown"] as const).map((outcome) => ({ labels: { outcome }, value: s[outcome] }));
  }));
  registry.add(new Gauge("installstats_uptime_seconds", "Seconds since the service started", () => [{ value: Math.round((clock() - deps.started) / 1000) }]));
  registry.add(new Gauge("installstats_resident_memory_bytes", "Resident set size of the process", () => [{ value: process.memoryUsage.rss() }]));

  return new Elysia({ name: "metrics" })
    .onAfterResponse({ as: "global" }, ({ request, route, set, responseValue }) => {
      // A handler that answers with a whole Response (ingestion) sets its status there.
      const status = responseValue instanceof Response ? responseValue.status : (set.status ?? 200);
      metrics.requests.inc({ route: route || "unmatched", method: request.method, status: String(status) });
    })
    .get("/metrics", () => new Response(registry.render(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } }), {
      detail: { tags: ["ops"], summary: "Prometheus metrics", description: "Requests, ingest latency, batch sizes, rejected reports by reason, rate limiting, database size, installs by outcome, scheduled jobs." },
    });
}
