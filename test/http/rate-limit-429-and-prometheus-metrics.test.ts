// Per-client rate limiting over HTTP (proxy-aware only for trusted proxies) and the Prometheus
// metrics; the limiter itself: test/unit/rate-limit-token-bucket.test.ts.
import { describe, expect, test } from "bun:test";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";

/**
 * The app listening on loopback, posting as one client behind a proxy on this host: loopback
 * peers and in-process requests are never limited, their forwarded clients are.
 */
function asForwardedClient(t: TestApp, client = "198.51.100.9") {
  t.app.listen({ hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${t.app.server!.port}`;
  return {
    async post(path: string, body: string | object) {
      const res = await fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": client },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
    },
    stop: () => t.app.stop(true),
  };
}

describe("rate limiting over HTTP", () => {
  test("429 with Retry-After and a JSON body once a client's burst is spent; reads and in-process requests are not limited", async () => {
    const t = await testApp({ rateLimit: 1, rateBurst: 2 });
    const c = asForwardedClient(t);
    try {
      expect((await c.post("/upload", startReport("r1"))).status).toBe(201);
      expect((await c.post("/upload", startReport("r2"))).status).toBe(201);
      const limited = await c.post("/upload", startReport("r3"));
      expect(limited.status).toBe(429);
      expect(limited.headers.get("retry-after")).toBe("1");
      expect(limited.body).toMatchObject({ error: "rate_limited" });
      expect((await t.get("/api/installs/r3")).status).toBe(404);
      expect((await t.get("/api/stats/summary")).status).toBe(200);
      // A request with no network peer (in-process) is not a client to limit.
      expect((await t.post("/upload", startReport("local"))).status).toBe(201);
      t.clock.advance(1000);
      expect((await c.post("/upload", startReport("r3"))).status).toBe(201);
    } finally {
      await c.stop();
    }
  });

  test("behind a trusted proxy each forwarded client has its own bucket", async () => {
    const t = await testApp({ rateLimit: 1, rateBurst: 1, trustedProxies: ["127.0.0.1", "::1"] });
    const server = t.app.listen({ hostname: "127.0.0.1", port: 0 });
    try {
      const post = (id: string, client: string) =>
        fetch(`http://127.0.0.1:${server.server!.port}/upload`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-forwarded-for": client },
          body: JSON.stringify(startReport(id)),
        }).then((r) => r.status);
      expect(await post("p1", "198.51.100.1")).toBe(201);
      expect(await post("p2", "198.51.100.1")).toBe(429);
      expect(await post("p3", "198.51.100.2")).toBe(201);
    } finally {
      await t.app.stop();
    }
  });
});

describe("/metrics", () => {
  test("Prometheus text with requests, latency, batches, rejected reasons, rate limiting and installs by outcome", async () => {
    const t = await testApp({ rateLimit: 100, rateBurst: 5 });
    const c = asForwardedClient(t);
    try {
      await c.post("/upload", startReport("m1"));
      await c.post("/upload/updatestatus", { status: "failed", error: "exit code 1", random_id: "m1" });
      await c.post("/upload/updatestatus", { status: "done", random_id: "m1" }); // 409
      await c.post("/upload", "{{broken");
      await c.post("/upload", startReport("m2"));
      await c.post("/upload", startReport("m3")); // 6th request: limited
    } finally {
      await c.stop();
    }
    await Bun.sleep(20); // requests are counted after their answer has gone out
    const res = await t.app.handle(new Request("http://localhost/metrics"));
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    const value = (line: string) =>
      Number(
        text
          .split("\n")
          .find((l) => l.startsWith(line))
          ?.slice(line.length)
          .trim(),
      );
    expect(value('installstats_http_requests_total{method="POST",route="/upload",status="201"}')).toBe(2);
    expect(value('installstats_http_requests_total{method="POST",route="/upload",status="429"}')).toBe(1);
    expect(value('installstats_rejected_reports_total{reason="invalid_json"}')).toBe(1);
    expect(value('installstats_rejected_reports_total{reason="already_final"}')).toBe(1);
    expect(value('installstats_rate_limited_total{family="ipv4"}')).toBe(1);
    expect(value('installstats_ingest_duration_seconds_count{endpoint="upload"}')).toBe(3);
    expect(value("installstats_write_batch_size_count")).toBeGreaterThan(0);
    expect(value('installstats_installs{outcome="failed"}')).toBe(1);
    expect(value('installstats_installs{outcome="in_progress"}')).toBe(1);
    expect(text).toContain('installstats_database_bytes{file="db"}');
  });
});
