// A metric's series, named once and kept by whoever counts in it often (the ingestion routes), are
// the series its labels name: in any label order, and rendered once made.
import { describe, expect, test } from "bun:test";
import { createMetrics } from "../../src/http/metrics.ts";

describe("metric series", () => {
  test("a counter's series is the one its labels name, in any order", async () => {
    const m = createMetrics();
    const kept = m.requests.series({ route: "/upload", method: "POST", status: "201" });
    kept.inc();
    kept.inc(2);
    m.requests.inc({ status: "201", route: "/upload", method: "POST" });
    expect(m.requests.series({ method: "POST", status: "201", route: "/upload" })).toBe(kept);
    expect(m.requests.get({ route: "/upload", method: "POST", status: "201" })).toBe(4);
    expect(m.requests.get({ route: "/upload", method: "POST", status: "202" })).toBe(0);
    expect(await m.registry.render()).toContain(
      'installstats_http_requests_total{method="POST",route="/upload",status="201"} 4',
    );
  });

  test("a histogram's series counts its observations into buckets, sum and count", async () => {
    const m = createMetrics();
    const kept = m.ingestSeconds.series({ endpoint: "telemetry" });
    kept.observe(0.002);
    m.ingestSeconds.observe(0.2, { endpoint: "telemetry" });
    const text = await m.registry.render();
    expect(text).toContain('installstats_ingest_duration_seconds_bucket{endpoint="telemetry",le="0.001"} 0');
    expect(text).toContain('installstats_ingest_duration_seconds_bucket{endpoint="telemetry",le="0.0025"} 1');
    expect(text).toContain('installstats_ingest_duration_seconds_bucket{endpoint="telemetry",le="0.25"} 2');
    expect(text).toContain('installstats_ingest_duration_seconds_count{endpoint="telemetry"} 2');
    expect(text).toContain('installstats_ingest_duration_seconds_sum{endpoint="telemetry"} 0.202');
    // Only series made are rendered.
    expect(text).not.toContain('endpoint="upload"');
  });
});
