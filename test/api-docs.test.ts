import { describe, expect, test, setDefaultTimeout } from "bun:test";
import { Elysia, t } from "elysia";
import { apiDocs, DOCS_PATH, FAVICON_PATH, SCALAR_ASSET_PATH, SPEC_PATH } from "../src/web/api-docs.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

const app = new Elysia().use(apiDocs({ version: "0.0.0-test" })).post(
  "/v1/report",
  ({ body }) => ({ accepted: body.tool }),
  {
    body: t.Object({ tool: t.String(), version: t.String(), ok: t.Boolean() }),
    detail: { tags: ["ingest"], summary: "Report one installation" },
  },
);

const get = (path: string) => app.handle(new Request(`http://localhost${path}`));

/** Every src/href/action/srcset/url(...) value and every absolute URL anywhere in the page. */
function referencedUrls(html: string): string[] {
  const urls: string[] = [];
  for (const m of html.matchAll(/\b(?:src|href|action|poster|data)\s*=\s*["']?([^"'\s>]+)/gi)) urls.push(m[1]!);
  for (const m of html.matchAll(/\burl\(\s*["']?([^"')]+)/gi)) urls.push(m[1]!);
  for (const m of html.matchAll(/@import\s+["']([^"']+)/gi)) urls.push(m[1]!);
  return urls;
}

describe("apiDocs", () => {
  test("GET /openapi/json is an OpenAPI 3.1 document with the typed route and the tags", async () => {
    const res = await get(SPEC_PATH);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("application/json");
    const spec = (await res.json()) as any;

    expect(spec.openapi).toMatch(/^3\.1\.\d+$/);
    expect(spec.info).toMatchObject({ title: "installstats API", version: "0.0.0-test" });
    expect(spec.info.description).toBeString();
    expect(spec.tags.map((tag: { name: string }) => tag.name)).toEqual(["ingest", "installs", "ops"]);
    for (const tag of spec.tags) expect(tag.description).toBeString();

    const op = spec.paths["/v1/report"]?.post;
    expect(op).toBeDefined();
    expect(op.tags).toEqual(["ingest"]);
    expect(op.summary).toBe("Report one installation");
    const schema = op.requestBody.content["application/json"].schema;
    expect(schema.type).toBe("object");
    expect(schema.required).toEqual(expect.arrayContaining(["tool", "version", "ok"]));
    expect(schema.properties).toMatchObject({
      tool: { type: "string" },
      version: { type: "string" },
      ok: { type: "boolean" },
    });

    // The docs routes themselves are not part of the API.
    expect(Object.keys(spec.paths)).toEqual(["/v1/report"]);
  });

  test("GET /openapi is HTML that loads Scalar from our server and nothing from outside", async () => {
    const res = await get(DOCS_PATH);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/html");
    const html = await res.text();

    const scripts = [...html.matchAll(/<script\b[^>]*\bsrc\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
    expect(scripts).toHaveLength(1);
    expect(new URL(scripts[0]!, "http://localhost/").pathname).toBe(SCALAR_ASSET_PATH);

    // Every reference is a path on our own server (no scheme, no protocol-relative host).
    const refs = referencedUrls(html);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(ref).toStartWith("/");
      expect(ref).not.toStartWith("//");
    }
    // ...and no absolute URL hides anywhere else (inline config, CSS, meta tags).
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).not.toMatch(/["'(=]\s*\/\/[a-z0-9]/i);
    for (const host of ["jsdelivr", "unpkg", "googleapis", "gstatic", "scalar.com", "cdnjs"]) {
      expect(html).not.toContain(host);
    }

    // Scalar's configuration: spec from our server, no web fonts, no outside services.
    const raw = html.match(/data-configuration='([^']*)'/)?.[1];
    expect(raw).toBeDefined();
    const config = JSON.parse(raw!);
    expect(config).toMatchObject({ url: SPEC_PATH, withDefaultFonts: false, telemetry: false });
    expect(config.cdn).toBe(scripts[0]);
    expect(config.favicon).toBe(FAVICON_PATH);
  });

  test("the Scalar bundle is served from our server", async () => {
    const res = await get(SCALAR_ASSET_PATH);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/javascript");
    expect(res.headers.get("cache-control")).toContain("max-age=31536000");
    const body = new Uint8Array(await res.arrayBuffer());
    expect(body.byteLength).toBeGreaterThan(1024 * 1024);
    // It is the standalone build: it reads the #api-reference element's configuration.
    expect(new TextDecoder().decode(body)).toContain("#api-reference[data-configuration]");
  });

  test("the page icon is served locally (no /favicon.ico 404 in the browser console)", async () => {
    const res = await get(FAVICON_PATH);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/svg+xml");
    expect(await res.text()).toStartWith("<svg");
  });

  test("the versioned script URL the page uses resolves to the bundle", async () => {
    const html = await (await get(DOCS_PATH)).text();
    const src = html.match(/<script\b[^>]*\bsrc\s*=\s*["']([^"']+)["']/i)![1]!;
    expect(src).toContain("v=0.0.0-test");
    const res = await get(src);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/javascript");
  });
});
