// The API docs: the OpenAPI document (servers naming the host it was asked from, counts as
// integers, the bearer scheme), the page and its assets (everything from this server). The page in
// Chromium: test/browser/api-docs-page-asks-for-the-token.test.ts.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { heapStats } from "bun:jsc";
import { Elysia, t } from "elysia";
import {
  DOCS_PATH,
  DOCS_SCRIPT_PATH,
  FAVICON_PATH,
  SCALAR_ASSET_PATH,
  SPEC_PATH,
  apiDocsRoutes,
  docsPageRoutes,
} from "../../src/web/api-docs-routes.ts";
import { testApp } from "../helpers/app.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(180_000);

const app = new Elysia()
  .use(apiDocsRoutes({ version: "0.0.0-test" }))
  .post("/v1/report", ({ body }) => ({ accepted: body.tool, count: 1 }), {
    body: t.Object({ tool: t.String(), version: t.String(), ok: t.Boolean() }),
    response: t.Object({ accepted: t.String(), count: t.Integer() }),
    detail: { tags: ["ingest"], summary: "Report one installation" },
  });

const get = (path: string, host = "localhost") => app.handle(new Request(`http://${host}${path}`));

/** The docs routes as Bun would call them. */
const routes = docsPageRoutes({ version: "0.0.0-test", headersFor: () => ({ "x-content-type-options": "nosniff" }) });
const page = (path: string) => {
  const route = (routes as Record<string, { GET: (r: Request) => Response }>)[path.replace(/\?.*$/, "")];
  if (!route) throw new Error(`no docs route ${path}`);
  return route.GET(new Request(`http://localhost${path}`));
};

/** Every src/href/action/srcset/url(...) value and every absolute URL anywhere in the page. */
function referencedUrls(html: string): string[] {
  const urls: string[] = [];
  for (const m of html.matchAll(/\b(?:src|href|action|poster|data)\s*=\s*["']?([^"'\s>]+)/gi)) urls.push(m[1]!);
  for (const m of html.matchAll(/\burl\(\s*["']?([^"')]+)/gi)) urls.push(m[1]!);
  for (const m of html.matchAll(/@import\s+["']([^"']+)/gi)) urls.push(m[1]!);
  return urls;
}

describe("the document", () => {
  test("GET /openapi/json is an OpenAPI 3.1 document with the typed route, the tags and this server", async () => {
    const res = await get(SPEC_PATH, "stats.example:8080");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("application/json");
    const spec = (await res.json()) as any;

    expect(spec.openapi).toMatch(/^3\.1\.\d+$/);
    expect(spec.info).toMatchObject({ title: "installstats API", version: "0.0.0-test" });
    expect(spec.info.description).toBeString();
    expect(spec.tags.map((tag: { name: string }) => tag.name)).toEqual([
      "ingest",
      "installs",
      "ops",
      "admin",
      "public",
    ]);
    for (const tag of spec.tags) expect(tag.description).toBeString();
    // The host it was asked as: examples ("curl http://stats.example:8080/...") carry it.
    expect(spec.servers).toEqual([{ url: "http://stats.example:8080", description: "this server" }]);
    expect(((await (await get(SPEC_PATH, "10.0.0.7:9000")).json()) as any).servers[0].url).toBe("http://10.0.0.7:9000");

    const op = spec.paths["/v1/report"]?.post;
    expect(op.tags).toEqual(["ingest"]);
    expect(op.summary).toBe("Report one installation");
    const schema = op.requestBody.content["application/json"].schema;
    expect(schema.required).toEqual(expect.arrayContaining(["tool", "version", "ok"]));
    expect(schema.properties).toMatchObject({
      tool: { type: "string" },
      version: { type: "string" },
      ok: { type: "boolean" },
    });
    // A count is an integer, not "a string or an integer".
    expect(op.responses[200].content["application/json"].schema.properties.count).toEqual({ type: "integer" });
    expect(spec.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });

    // The docs routes themselves are not part of the API.
    expect(Object.keys(spec.paths)).toEqual(["/v1/report"]);
  });

  test("in the whole service: every count, id and size is an integer; numeric parameters are integers with their range", async () => {
    const t = await testApp();
    const spec = (await (await t.app.handle(new Request("http://installstats.lan:8080/openapi/json"))).json()) as any;
    expect(spec.servers[0].url).toBe("http://installstats.lan:8080");
    // Nowhere a number documented as text-or-number (what made examples show "string").
    const text = JSON.stringify(spec);
    expect(text).not.toContain('"format":"integer"');
    expect(text).not.toContain('"format":"numeric"');
    const summary = spec.paths["/api/stats/summary"].get;
    const props = summary.responses[200].content["application/json"].schema.properties;
    for (const key of ["total", "success", "failed", "aborted", "in_progress", "unknown"])
      expect(props[key], key).toEqual({ type: "integer" });
    expect(props.duration.properties.n.type).toBe("integer");
    const param = (path: string, name: string) =>
      spec.paths[path].get.parameters.find((p: { name: string }) => p.name === name).schema;
    expect(param("/api/stats/summary", "days")).toMatchObject({ type: "integer", minimum: 1, maximum: 3660 });
    expect(param("/api/stats/summary", "exit_code")).toMatchObject({ type: "integer", minimum: 0, maximum: 255 });
    expect(param("/api/installs", "limit")).toMatchObject({ type: "integer", minimum: 1, maximum: 500 });
    expect(param("/api/admin/rejected", "limit")).toMatchObject({ type: "integer", minimum: 1, maximum: 1000 });
    // The admin routes say what they need.
    expect(spec.paths["/api/admin/replay"].post.security).toEqual([{ bearer: [] }]);
  });
});

describe("the page", () => {
  test("GET /openapi is HTML that loads Scalar and its own script from our server and nothing from outside", async () => {
    const res = page(DOCS_PATH);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/html");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await res.text();

    const scripts = [...html.matchAll(/<script\b[^>]*\bsrc\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
    expect(scripts.map((s) => new URL(s, "http://localhost/").pathname)).toEqual([SCALAR_ASSET_PATH, DOCS_SCRIPT_PATH]);
    // No inline script: the policy allows none.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);

    const refs = referencedUrls(html);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(ref).toStartWith("/");
      expect(ref).not.toStartWith("//");
    }
    expect(html).not.toMatch(/https?:\/\//i);
    for (const host of ["jsdelivr", "unpkg", "googleapis", "gstatic", "scalar.com", "cdnjs"])
      expect(html).not.toContain(host);

    // Scalar's configuration: no web fonts, no outside services; the spec from our server.
    const raw = html.match(/data-config="([^"]*)"/)?.[1];
    const config = JSON.parse(
      raw!
        .replaceAll("&quot;", '"')
        .replaceAll("&#39;", "'")
        .replaceAll("&lt;", "<")
        .replaceAll("&gt;", ">")
        .replaceAll("&amp;", "&"),
    );
    expect(config).toMatchObject({ spec: SPEC_PATH, tokenKey: "installstats.readToken" });
    expect(config.scalar).toMatchObject({
      withDefaultFonts: false,
      telemetry: false,
      favicon: FAVICON_PATH,
      hideClientButton: true,
    });
  });

  test("the Scalar bundle, the page's script and its icon are served from our server, cached", async () => {
    const html = await page(DOCS_PATH).text();
    const [scalarSrc, scriptSrc] = [...html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]!);
    expect(scalarSrc).toContain("v=0.0.0-test");
    const scalar = page(scalarSrc!);
    expect(scalar.headers.get("content-type")).toStartWith("text/javascript");
    expect(scalar.headers.get("cache-control")).toContain("max-age=31536000");
    const body = new Uint8Array(await scalar.arrayBuffer());
    expect(body.byteLength).toBeGreaterThan(1024 * 1024);
    expect(new TextDecoder().decode(body)).toContain("createApiReference");

    // The script's URL carries a hash of its text: a changed script is a new URL.
    expect(scriptSrc).toMatch(/\?v=[0-9a-z]+$/);
    const script = await page(scriptSrc!).text();
    expect(script).toStartWith("(function");
    expect(script).toContain("createApiReference");

    const icon = page(FAVICON_PATH);
    expect(icon.headers.get("content-type")).toBe("image/svg+xml");
    expect(await icon.text()).toStartWith("<svg");
  });

  // A Blob held by the routes counts its 4.35 MB as live heap at every collection, and the engine
  // lets the heap grow to about 3x what it finds live: +10 MB of peak RSS under ingestion load
  // (docs/performance.md, "Peak RSS under load").
  test("the routes hold no Blob of the Scalar bundle between requests (it is opened per request)", async () => {
    const blobs = () => {
      Bun.gc(true);
      return heapStats().objectTypeCounts.Blob ?? 0;
    };
    const before = blobs();
    const held = Array.from({ length: 4 }, () => docsPageRoutes({ version: "0.0.0-test", headersFor: () => ({}) }));
    expect(blobs() - before).toBeLessThanOrEqual(0);
    // Each still serves the whole bundle.
    for (const r of held) {
      const response = r[SCALAR_ASSET_PATH].GET(new Request(`http://localhost${SCALAR_ASSET_PATH}`));
      expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(1024 * 1024);
    }
  });
});
