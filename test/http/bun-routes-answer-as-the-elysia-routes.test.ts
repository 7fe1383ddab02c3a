// Ingestion over a real socket: Bun's own routes answer POST /upload and /upload/updatestatus
// (src/ingest/ingest-routes.ts), so these check that they answer exactly as the Elysia routes behind
// app.handle do: body, status, headers, metrics, the rejected log, 503s, and what falls through.
import { afterEach, describe, expect, test } from "bun:test";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";

let running: TestApp | null = null;

function listening(t: TestApp): string {
  t.app.listen({ hostname: "127.0.0.1", port: 0 });
  running = t;
  return `http://127.0.0.1:${t.app.server!.port}`;
}

afterEach(async () => {
  await running?.app.stop(true);
  running = null;
});

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

const answer = async (res: Response) => ({
  status: res.status,
  body: await res.json(),
  type: res.headers.get("content-type"),
});

describe("ingestion on Bun's routes", () => {
  test("answers as app.handle does, with the same headers, for every kind of result", async () => {
    const wire = await testApp();
    const url = listening(wire);
    const inProcess = await testApp();
    const cases: [string, string][] = [
      ["/upload", JSON.stringify(startReport("m-1"))],
      ["/upload", JSON.stringify(startReport("m-1"))], // duplicate
      ["/upload/updatestatus", JSON.stringify({ status: "done", random_id: "m-1" })],
      ["/upload/updatestatus", JSON.stringify({ status: "failed", random_id: "m-1" })], // 409
      ["/upload/updatestatus", JSON.stringify({ status: "done", random_id: "m-2" })], // held
      ["/upload", '{"random_id": "m-3", "type": "lxc", "disk_size": 8G}'], // repaired
      ["/upload", "{not json"],
      ["/upload", JSON.stringify(startReport("m-4", { type: "spaceship" }))],
    ];
    for (const [path, body] of cases) {
      const viaSocket = await post(url + path, body);
      const viaHandle = await inProcess.app.handle(
        new Request(`http://localhost${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        }),
      );
      expect(await answer(viaSocket), `${path} ${body}`).toEqual(await answer(viaHandle));
      for (const header of [
        "x-content-type-options",
        "x-frame-options",
        "content-security-policy",
        "referrer-policy",
      ]) {
        expect(viaSocket.headers.get(header), header).toBe(viaHandle.headers.get(header));
        expect(viaSocket.headers.get(header), header).not.toBeNull();
      }
    }
    // The same rows and rejected-log entries on both sides.
    const rejected = async (t: TestApp) =>
      (await t.rejected()).map(({ reason, httpStatus, randomId }) => ({ reason, httpStatus, randomId }));
    expect(await rejected(wire)).toEqual(await rejected(inProcess));
    expect((await rejected(wire)).map((r) => r.reason).sort()).toEqual([
      "already_final",
      "invalid_field",
      "invalid_json",
      "repaired",
    ]);
    expect((await wire.get("/api/installs/m-1")).body).toMatchObject({ outcome: "success" });
  });

  test("every request is counted in the metrics by route and status", async () => {
    const t = await testApp();
    const url = listening(t);
    await post(`${url}/upload`, JSON.stringify(startReport("c-1")));
    await post(`${url}/upload`, JSON.stringify(startReport("c-2")));
    await post(`${url}/upload`, "{broken");
    await post(`${url}/upload/updatestatus`, JSON.stringify({ status: "done", random_id: "c-1" }));
    const text = await (await fetch(`${url}/metrics`)).text();
    const value = (labels: string) =>
      Number(
        text
          .split("\n")
          .find((l) => l.startsWith(`installstats_http_requests_total{${labels}}`))
          ?.split(" ")
          .pop(),
      );
    expect(value('method="POST",route="/upload",status="201"')).toBe(2);
    expect(value('method="POST",route="/upload",status="400"')).toBe(1);
    expect(value('method="POST",route="/upload/updatestatus",status="200"')).toBe(1);
    expect(text).toContain('installstats_ingest_duration_seconds_count{endpoint="upload"} 3');
  });

  test("CORS for configured origins; other methods, preflights and path variants reach the app", async () => {
    const t = await testApp({ corsOrigins: ["https://dash.example"] });
    const url = listening(t);
    const allowed = await post(`${url}/upload`, JSON.stringify(startReport("o-1")), { origin: "https://dash.example" });
    expect(allowed.status).toBe(201);
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://dash.example");
    expect(allowed.headers.get("vary")).toBe("Origin");
    const other = await post(`${url}/upload`, JSON.stringify(startReport("o-2")), { origin: "https://evil.example" });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const preflight = await fetch(`${url}/upload`, { method: "OPTIONS", headers: { origin: "https://dash.example" } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    const get = await fetch(`${url}/upload`);
    expect(get.status).toBe(404);
    expect(await get.json()).toMatchObject({ error: "not_found" });
    const slash = await post(`${url}/upload/`, JSON.stringify(startReport("o-3")));
    expect((await answer(slash)).body).toMatchObject({ result: "created", random_id: "o-3" });
  });

  test("503 with Retry-After when the database refuses writes, and the rate limit's 429", async () => {
    const t = await testApp({ rateLimit: 1, rateBurst: 2 });
    const url = listening(t);
    t.sqlite.run("PRAGMA query_only = ON");
    const refused = await post(`${url}/upload`, JSON.stringify(startReport("s-1")));
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(await refused.json()).toMatchObject({ error: "storage_unavailable" });
    t.sqlite.run("PRAGMA query_only = OFF");
    // The limit is per forwarded client of a proxy on this host (loopback itself is never limited).
    const client = { "x-forwarded-for": "198.51.100.4" };
    expect((await post(`${url}/upload`, JSON.stringify(startReport("s-2")), client)).status).toBe(201);
    expect((await post(`${url}/upload`, JSON.stringify(startReport("s-3")), client)).status).toBe(201);
    const limited = await post(`${url}/upload`, JSON.stringify(startReport("s-4")), client);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ error: "rate_limited" });
    expect(limited.headers.get("x-content-type-options")).toBe("nosniff");
  });
});
