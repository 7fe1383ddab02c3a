// Access control, security headers and error safety.
import { describe, expect, test } from "bun:test";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";
import { accessOf, tokenMatches } from "../../src/http/access.ts";
import { pathOf } from "../../src/http/hardening.ts";

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function call(t: TestApp, method: string, path: string, headers: Record<string, string> = {}, body?: object) {
  const res = await t.app.handle(
    new Request(`http://localhost${path}`, {
      method,
      headers: body ? { "content-type": "application/json", ...headers } : headers,
      body: body ? JSON.stringify(body) : undefined,
    }),
  );
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

describe("access", () => {
  test("routes are classified: ingestion and health open, DELETE and /api/admin admin, the rest read", async () => {
    expect(accessOf("POST", "/upload")).toBe("open");
    expect(accessOf("POST", "/upload/updatestatus")).toBe("open");
    expect(accessOf("GET", "/healthz")).toBe("open");
    expect(accessOf("DELETE", "/api/installs/x")).toBe("admin");
    expect(accessOf("GET", "/api/admin/rejected")).toBe("admin");
    for (const p of ["/api/installs", "/api/stats/summary", "/data/json", "/openapi", "/metrics", "/"])
      expect(accessOf("GET", p)).toBe("read");
    expect(tokenMatches("secret", "secret")).toBe(true);
    expect(tokenMatches("secreT", "secret")).toBe(false);
    expect(tokenMatches(null, "secret")).toBe(false);
  });

  test("without tokens: reads are public, admin actions are off (403)", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("a"));
    expect((await call(t, "GET", "/api/installs/a")).status).toBe(200);
    const del = await call(t, "DELETE", "/api/installs/a");
    expect(del.status).toBe(403);
    expect(del.body).toMatchObject({ error: "forbidden" });
    expect((await call(t, "GET", "/api/installs/a")).status).toBe(200);
  });

  test("a read token guards reads (not ingestion or health); the admin token reads too", async () => {
    const t = await testApp({ readToken: "r3ad", adminToken: "adm1n" });
    expect((await t.post("/upload", startReport("b"))).status).toBe(201);
    expect((await t.post("/upload/updatestatus", { status: "done", random_id: "b" })).status).toBe(200);
    expect((await call(t, "GET", "/healthz")).status).toBe(200);
    for (const path of [
      "/api/installs/b",
      "/api/stats/summary",
      "/data/summary",
      "/openapi/json",
      "/api/export?format=ndjson",
    ]) {
      const none = await call(t, "GET", path).catch(() => null);
      expect(none?.status, path).toBe(401);
      expect(none?.headers.get("www-authenticate"), path).toContain("Bearer");
      expect((await call(t, "GET", path, bearer("wrong")).catch(() => null))?.status, path).toBe(401);
    }
    expect((await call(t, "GET", "/api/installs/b", bearer("r3ad"))).status).toBe(200);
    expect((await call(t, "GET", "/api/installs/b", bearer("adm1n"))).status).toBe(200);
  });

  test("admin: DELETE needs the admin token, not the read token, and removes the install", async () => {
    const t = await testApp({ readToken: "r3ad", adminToken: "adm1n" });
    await t.post("/upload", startReport("c"));
    expect((await call(t, "DELETE", "/api/installs/c")).status).toBe(401);
    expect((await call(t, "DELETE", "/api/installs/c", bearer("r3ad"))).status).toBe(401);
    expect((await call(t, "DELETE", "/api/installs/c", bearer("adm1n"))).body).toEqual({
      deleted: true,
      random_id: "c",
    });
    expect((await call(t, "DELETE", "/api/installs/c", bearer("adm1n"))).status).toBe(404);
    expect((await call(t, "GET", "/api/installs/c", bearer("r3ad"))).status).toBe(404);
  });

  test("admin: the rejected log is listed with raw bodies", async () => {
    const t = await testApp({ adminToken: "adm1n" });
    await t.post("/upload", "{{nope");
    expect((await call(t, "GET", "/api/admin/rejected")).status).toBe(401);
    const list = await call(t, "GET", "/api/admin/rejected?limit=5", bearer("adm1n"));
    expect(list.status).toBe(200);
    expect((list.body.entries as { reason: string; body: string }[])[0]).toMatchObject({
      reason: "invalid_json",
      body: "{{nope",
    });
  });
});

describe("pathOf", () => {
  test("is the URL's pathname for the absolute URLs Bun gives requests (dot segments already resolved)", async () => {
    for (const url of [
      "http://127.0.0.1:8080/upload",
      "http://h/api/admin/rejected?limit=2",
      "http://h:1/",
      "http://h",
      "http://h/api/%61dmin/x",
      "http://h/upload//x?a=/b",
      "https://[::1]:8443/healthz?x",
    ]) {
      expect(pathOf(url)).toBe(new URL(url).pathname);
    }
  });
});

describe("headers and errors", () => {
  test("security headers on every kind of answer; no CORS unless configured", async () => {
    const t = await testApp();
    for (const [method, path, body] of [
      ["GET", "/api/stats/summary"],
      ["GET", "/data/json"],
      ["GET", "/nope"],
      ["POST", "/upload", startReport("h")],
      ["GET", "/openapi"],
    ] as const) {
      const res = await t.app.handle(
        new Request(`http://localhost${path}`, {
          method,
          headers: { origin: "https://evil.example" },
          body: body ? JSON.stringify(body) : undefined,
        }),
      );
      expect(res.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(res.headers.get("x-frame-options"), path).toBe("DENY");
      expect(res.headers.get("content-security-policy"), path).toContain("default-src 'self'");
      expect(res.headers.get("access-control-allow-origin"), path).toBeNull();
    }
    const named = await testApp({ corsOrigins: ["https://dash.example"] });
    const ok = await named.app.handle(
      new Request("http://localhost/api/stats/summary", { headers: { origin: "https://dash.example" } }),
    );
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://dash.example");
    const other = await named.app.handle(
      new Request("http://localhost/api/stats/summary", { headers: { origin: "https://evil.example" } }),
    );
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    // The original API's paths follow the same setting (docs/api.md#compatibility-with-the-original-api).
    const any = await testApp({ corsOrigins: ["*"] });
    const data = await any.app.handle(
      new Request("http://localhost/data/json", { headers: { origin: "https://evil.example" } }),
    );
    expect(data.headers.get("access-control-allow-origin")).toBe("*");
  });

  test("an internal error answers 500 with the one error shape and no stack trace", async () => {
    const t = await testApp();
    // A bug (not a storage error) inside a read: the client sees a clean 500, the log the stack.
    t.store.getExecutions = () => {
      throw new TypeError("boom at somewhere.ts:1");
    };
    const res = await t.get("/api/installs/x");
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: "internal", message: "internal error; see the server log" });
    expect(t.logLines.join("")).toContain("boom");
  });
});

describe("admin maintenance over HTTP", () => {
  test("prune and replay need the admin token and do their work (backup: test/e2e/binary-lifecycle-survives-a-restart.test.ts)", async () => {
    const t = await testApp({ adminToken: "adm1n" });
    await t.post("/upload", startReport("old"));
    t.clock.advance(500 * 24 * 3600_000);
    await t.post("/upload", startReport("new"));
    await t.post("/upload", '{"type": "lxc", "random_id": "rep", "nsapp": "x"'); // 400: the current parser still cannot read it
    expect((await call(t, "POST", "/api/admin/prune?older_than=400d")).status).toBe(401);
    const dry = await call(t, "POST", "/api/admin/prune?older_than=400d&dry_run=true", bearer("adm1n"));
    expect(dry.body).toMatchObject({ dry_run: true, executions: 1, held: 0, rejected: 0 });
    expect((await t.get("/api/installs/old")).status).toBe(200);
    // A misspelt dry_run is refused, not taken as a real prune.
    const typo = await call(t, "POST", "/api/admin/prune?older_than=400d&dry-run=true", bearer("adm1n"));
    expect({ status: typo.status, field: typo.body.field }).toEqual({ status: 400, field: "dry-run" });
    expect((await t.get("/api/installs/old")).status).toBe(200);
    const pruned = await call(t, "POST", "/api/admin/prune?older_than=400d", bearer("adm1n"));
    expect(pruned.body).toMatchObject({ dry_run: false, executions: 1 });
    expect((await t.get("/api/installs/old")).status).toBe(404);
    expect((await t.get("/api/installs/new")).status).toBe(200);
    expect((await call(t, "POST", "/api/admin/prune?older_than=soon", bearer("adm1n"))).body).toMatchObject({
      error: "invalid_field",
      field: "older_than",
    });

    const replay = await call(t, "POST", "/api/admin/replay", bearer("adm1n"));
    expect(replay.body).toMatchObject({ tried: 1 });
    expect(replay.body.results).toEqual({ "still invalid": 1 });
  });
});
