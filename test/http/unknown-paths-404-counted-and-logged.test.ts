// A POST to an unknown path (a script pointed at a wrong URL) is 404, counted per path in
// /metrics and in GET /api/ingest/unknown-paths, and its body kept in the rejected log at most
// once a minute per path.
import { describe, expect, test } from "bun:test";
import { testApp } from "../helpers/app.ts";

describe("POSTs to unknown paths", () => {
  test("404 naming the right URLs; counted per path; bodies logged once a minute per path", async () => {
    const t = await testApp();
    for (let i = 0; i < 3; i++) {
      const r = await t.post("/upload/telemetry", { random_id: `x${i}`, status: "installing" });
      expect(r.status).toBe(404);
      expect(r.body.message).toContain("/telemetry");
    }
    expect((await t.post("/api/telemetry", { a: 1 })).status).toBe(404);
    const list = await t.get("/api/ingest/unknown-paths");
    expect(list.body.paths).toMatchObject([
      { path: "/upload/telemetry", count: 3 },
      { path: "/api/telemetry", count: 1 },
    ]);
    const logged = (await t.rejected()).filter((e) => e.reason === "unknown_path");
    expect(logged.map((e) => e.message.split(" (")[0])).toEqual([
      "POST to unknown path /upload/telemetry",
      "POST to unknown path /api/telemetry",
    ]);
    expect(JSON.parse(new TextDecoder().decode(logged[0]!.body))).toEqual({ random_id: "x0", status: "installing" });
    expect(logged[0]!.httpStatus).toBe(404);
    const metrics = await fetchText(t, "/metrics");
    expect(metrics).toContain('installstats_unknown_path_posts_total{path="/upload/telemetry"} 3');
    // A minute later the next body of that path is kept again.
    t.clock.advance(61_000);
    await t.post("/upload/telemetry", { random_id: "x9" });
    expect((await t.rejected()).filter((e) => e.reason === "unknown_path")).toHaveLength(3);
    // GETs to unknown paths are not counted.
    expect((await t.get("/nope")).status).toBe(404);
    expect(((await t.get("/api/ingest/unknown-paths")).body.paths as unknown[]).length).toBe(2);
  });

  test("with a read token set, reports and wrong-path POSTs still need none: 201 and a counted 404, not 401; reads and admin still do", async () => {
    const t = await testApp({ readToken: "r3ad-token", adminToken: "adm1n-token" });
    expect(
      (
        await t.post("/telemetry", {
          random_id: "tok-1",
          execution_id: "tok-1",
          nsapp: "x",
          type: "lxc",
          status: "installing",
        })
      ).status,
    ).toBe(201);
    expect(
      (await t.post("/upload", { random_id: "tok-2", nsapp: "x", type: "lxc", status: "installing" })).status,
    ).toBe(201);
    expect((await t.post("/upload/telemetry", { random_id: "tok-3" })).status).toBe(404);
    expect((await t.get("/api/ingest/unknown-paths")).status).toBe(401);
    const res = await t.app.handle(
      new Request("http://localhost/api/ingest/unknown-paths", { headers: { authorization: "Bearer r3ad-token" } }),
    );
    expect(((await res.json()) as { paths: unknown[] }).paths).toMatchObject([{ path: "/upload/telemetry", count: 1 }]);
    expect((await t.post("/api/admin/replay", "")).status).toBe(401);
  });
});

async function fetchText(t: Awaited<ReturnType<typeof testApp>>, path: string): Promise<string> {
  const res = await t.app.handle(new Request(`http://localhost${path}`));
  return res.text();
}
