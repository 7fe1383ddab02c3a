// OpenAPI 3.1 spec + interactive Scalar docs that work with no internet access.
//
// Routes:
//   GET /openapi                     docs page: asks for the read token when the server has one (as
//                                    the dashboard does), then shows the spec with Scalar    [Bun route]
//   GET /openapi/assets/scalar.js    Scalar standalone bundle, served from this process      [Bun route]
//   GET /openapi/assets/docs.js      the page's own script (below, `docsPageScript`)         [Bun route]
//   GET /openapi/assets/favicon.svg  page icon (spares the browser a /favicon.ico 404)      [Bun route]
//   GET /openapi/json                OpenAPI 3.1 document (a read: needs the read token when set) [Elysia]
//
// The page and its assets hold no data, so they are Bun routes answered before Elysia's access
// check (like the dashboard's); the document is read by the page's script with the token.
//
// The Scalar bundle is embedded with `with { type: "file" }`: under `bun run` the import
// yields the real path in node_modules; in a `bun build --compile` binary it yields a
// `/$bunfs/...` path inside the executable. No build flag is needed for it.
// The path is relative on purpose: @scalar/api-reference's `exports` map does not expose
// `dist/browser/standalone.js`, so the bare specifier does not resolve.
import { Elysia } from "elysia";
import { toOpenAPISchema } from "@elysiajs/openapi";
// @ts-ignore -- TS has no types for a `type: "file"` import of a .js file; Bun gives a path string.
import scalarBundle from "../../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };

export const DOCS_PATH = "/openapi";
export const SPEC_PATH = `${DOCS_PATH}/json`;
export const SCALAR_ASSET_PATH = `${DOCS_PATH}/assets/scalar.js`;
export const DOCS_SCRIPT_PATH = `${DOCS_PATH}/assets/docs.js`;
export const FAVICON_PATH = `${DOCS_PATH}/assets/favicon.svg`;

/** Where the dashboard keeps the read token (src/web/dashboard/api.ts): one token for both pages. */
const READ_TOKEN_KEY = "installstats.readToken";

/**
 * The docs page's policy: Scalar adds style elements and inline styles as it renders, so styles
 * may be inline; scripts come only from this server's files.
 */
const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

// Without an icon link the browser fetches /favicon.ico, which 404s (a console error).
const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">' +
  '<rect width="16" height="16" rx="3" fill="#0082d0"/>' +
  '<path d="M4 11V5m4 6V3m4 8V7" stroke="#fff" stroke-width="2" stroke-linecap="round"/></svg>';

const SCALAR_BUNDLE_PATH: string = scalarBundle;

const TITLE = "installstats API";
const DESCRIPTION =
  "Self-hosted installation telemetry. Installer scripts report through the ingest wire protocols; the read API answers from the collected data. " +
  "When the server has a read token, reads need `Authorization: Bearer <read token>`; admin routes always need the admin token.";

export interface ApiDocsOptions {
  /** Service version shown in the spec; also busts the browser cache of the bundle. */
  version: string;
}

// ---- the document ------------------------------------------------------------------------------

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Elysia's t.Integer, t.Numeric and t.BooleanString accept a number (boolean) or its text, and are
 * documented so: `anyOf: [{type: "string", format: "integer"}, {type: "integer"}]`, which
 * Scalar's examples show as "string". The document keeps the JSON type only: answers carry
 * numbers, and a query string's text is read as one.
 */
function collapseTextForms(schema: Json): Json | null {
  const anyOf = schema.anyOf;
  if (!Array.isArray(anyOf) || anyOf.length !== 2 || !anyOf.every(isObject)) return null;
  const text = anyOf.find(
    (s) => s.type === "string" && (s.format === "integer" || s.format === "numeric" || s.format === "boolean"),
  );
  const typed = anyOf.find((s) => s !== text && (s.type === "integer" || s.type === "number" || s.type === "boolean"));
  if (!text || !typed) return null;
  const { anyOf: _, ...outer } = schema;
  return { ...outer, ...typed };
}

/**
 * Read parameters are taken as text and checked in code (src/read/query.ts), so they are declared
 * as strings; those documented as "a whole number from A to B" are integers in the document.
 */
function integerParameter(schema: Json): Json | null {
  if (schema.type !== "string" || typeof schema.description !== "string") return null;
  const m = /a whole number(?: from (-?\d+) to (-?\d+))?/.exec(schema.description);
  if (!m) return null;
  const out: Json = { ...schema, type: "integer" };
  if (m[1] !== undefined) {
    out.minimum = Number(m[1]);
    out.maximum = Number(m[2]);
  }
  return out;
}

function tidy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(tidy);
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) out[k] = tidy(v);
  return collapseTextForms(out) ?? out;
}

/** The document without servers (those depend on the request), built once all routes exist. */
function documentOf(app: Elysia, version: string): Json {
  const { paths, components } = toOpenAPISchema(
    app,
    { paths: [DOCS_PATH, SPEC_PATH, SCALAR_ASSET_PATH, DOCS_SCRIPT_PATH, FAVICON_PATH] },
    undefined,
    undefined,
    "3.1.2",
  );
  const tidied = tidy(paths) as Record<string, Record<string, { parameters?: { schema?: Json }[] }>>;
  for (const item of Object.values(tidied)) {
    for (const op of Object.values(item)) {
      for (const p of op.parameters ?? []) if (p.schema) p.schema = integerParameter(p.schema) ?? p.schema;
    }
  }
  return {
    openapi: "3.1.2",
    // Title and description are shown as Markdown by Scalar.
    info: { title: TITLE, version, description: DESCRIPTION },
    tags: [
      { name: "ingest", description: "Wire protocols used by installer scripts to report installs (no credential)" },
      {
        name: "installs",
        description: "Read API over the collected installs (the read token, when the server has one)",
      },
      { name: "ops", description: "Health and operational endpoints" },
      { name: "admin", description: "Maintenance; always the admin token" },
      { name: "public", description: "Published statistics (only with --public-stats); no token" },
    ],
    // Reads need the bearer token only when the server has a read token: both are allowed.
    security: [{}, { bearer: [] }],
    paths: tidied,
    components: {
      ...(tidy(components) as Json),
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description:
            "The read token (INSTALLSTATS_READ_TOKEN) for reads, the admin token (INSTALLSTATS_ADMIN_TOKEN) for admin routes.",
        },
      },
    },
  };
}

/** The OpenAPI document at /openapi/json, naming the server it was asked from, so examples carry the host. */
export function apiDocsRoutes(options: ApiDocsOptions) {
  const { version } = options;
  let cached: { routes: number; text: string } | null = null;
  const docs: Elysia = new Elysia({ name: "installstats/api-docs", seed: version });
  return docs.get(
    SPEC_PATH,
    ({ request }) => {
      // Built on the first request, when every route is registered; again only if routes were added.
      const routes = docs.routes.length;
      if (cached?.routes !== routes) cached = { routes, text: JSON.stringify(documentOf(docs, version)) };
      // The document's JSON with `servers` spliced in first (the document itself is shared).
      const servers = JSON.stringify([{ url: new URL(request.url).origin, description: "this server" }]);
      return new Response(`{"servers":${servers},${cached.text.slice(1)}`, {
        headers: { "content-type": "application/json; charset=utf-8" },
      });
    },
    { detail: { hide: true } },
  );
}

// ---- the page ------------------------------------------------------------------------------------

const escapeAttr = (s: string): string =>
  s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/'/g, "&#39;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** What the page's script needs: where the document is, where the token is kept, Scalar's settings. */
interface DocsConfig {
  spec: string;
  tokenKey: string;
  scalar: Record<string, unknown>;
}

/** Scalar's settings: nothing it loads or links may leave this server. */
const SCALAR_CONFIG = {
  favicon: FAVICON_PATH,
  withDefaultFonts: false, // otherwise fonts.scalar.com
  telemetry: false,
  showDeveloperTools: "never", // toolbar links to dashboard.scalar.com
  hideClientButton: true, // "Open API Client" links to client.scalar.com
  agent: { disabled: true }, // "Ask AI" talks to scalar.com
  mcp: { disabled: true },
};

function pageHtml(scalarSrc: string, scriptSrc: string): string {
  const config: DocsConfig = { spec: SPEC_PATH, tokenKey: READ_TOKEN_KEY, scalar: SCALAR_CONFIG };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${TITLE}</title>
<link rel="icon" href="${FAVICON_PATH}" type="image/svg+xml">
<style>
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; }
.docs-gate { max-width: 380px; margin: 12vh auto; padding: 0 16px; display: flex; flex-direction: column; gap: 8px; }
.docs-gate[hidden] { display: none; }
.docs-gate input, .docs-gate button { font: inherit; padding: 6px 10px; }
</style>
</head>
<body>
<form class="docs-gate" id="docs-token" hidden>
<h1>${TITLE}</h1>
<p id="docs-token-text">This server needs a read token to show its API documentation.</p>
<label for="token">Read token</label>
<input type="password" id="token" autocomplete="off" required>
<button type="submit">Show the documentation</button>
</form>
<p class="docs-gate" id="docs-status" role="status">Loading the API documentation…</p>
<div id="docs" data-config="${escapeAttr(JSON.stringify(config))}"></div>
<script src="${scalarSrc}" defer></script>
<script src="${scriptSrc}" defer></script>
</body>
</html>
`;
}

/**
 * The page's script, served as text (typed here, so the compiler checks it). It runs in the
 * browser on its own: it may use nothing outside its body. It reads the document with the saved
 * read token; on 401 it asks for the token (kept where the dashboard keeps it) and tries again;
 * then it hands the document to Scalar with this page's address as the server and the token
 * filled in for "Test request".
 */
function docsPageScript(): void {
  const root = document.getElementById("docs")!;
  const gate = document.getElementById("docs-token") as HTMLFormElement;
  const gateText = document.getElementById("docs-token-text")!;
  const input = document.getElementById("token") as HTMLInputElement;
  const status = document.getElementById("docs-status")!;
  const config = JSON.parse(root.dataset.config ?? "{}") as DocsConfig;
  const show = async (): Promise<void> => {
    const token = localStorage.getItem(config.tokenKey);
    let res: Response;
    try {
      res = await fetch(config.spec, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    } catch (e) {
      status.textContent = `Could not load the API document: ${e instanceof Error ? e.message : String(e)}`;
      return;
    }
    if (res.status === 401) {
      status.hidden = true;
      gate.hidden = false;
      if (token) gateText.textContent = "That read token was refused. Enter the server's read token.";
      input.focus();
      return;
    }
    if (!res.ok) {
      status.textContent = `Could not load the API document: ${res.status} ${res.statusText}`;
      return;
    }
    const content = (await res.json()) as Record<string, unknown>;
    gate.hidden = true;
    status.hidden = true;
    const scalar = (
      window as unknown as { Scalar?: { createApiReference(el: Element, c: Record<string, unknown>): unknown } }
    ).Scalar;
    if (!scalar) {
      status.hidden = false;
      status.textContent = "Could not start the API reference (its script did not load).";
      return;
    }
    scalar.createApiReference(root, {
      ...config.scalar,
      content,
      // The address this page was opened at (also right behind a reverse proxy).
      servers: [{ url: location.origin, description: "this server" }],
      ...(token
        ? { authentication: { preferredSecurityScheme: "bearer", securitySchemes: { bearer: { token } } } }
        : {}),
    });
  };
  gate.addEventListener("submit", (e) => {
    e.preventDefault();
    const value = input.value.trim();
    if (value) localStorage.setItem(config.tokenKey, value);
    else localStorage.removeItem(config.tokenKey);
    void show();
  });
  void show();
}

interface Served {
  body: string | Blob;
  type: string;
  cache: string;
}

/**
 * The docs page and its assets as Bun.serve routes (see the top of this file). The versioned
 * asset URLs carry a hash of their content, so a year-long immutable cache stays right.
 */
export function docsPageRoutes(o: ApiDocsOptions & { headersFor: (request: Request) => Record<string, string> }) {
  const script = `(${docsPageScript.toString()})();\n`;
  const scalarSrc = `${SCALAR_ASSET_PATH}?v=${encodeURIComponent(o.version)}`;
  const scriptSrc = `${DOCS_SCRIPT_PATH}?v=${Bun.hash(script).toString(36)}`;
  const html = pageHtml(scalarSrc, scriptSrc);
  const immutable = "public, max-age=31536000, immutable";
  const route = (served: () => Served) => {
    const handler = (request: Request): Response => {
      const s = served();
      const headers = {
        ...o.headersFor(request),
        "content-security-policy": DOCS_CSP,
        "content-type": s.type,
        "cache-control": s.cache,
      };
      return new Response(request.method === "HEAD" ? null : s.body, { headers });
    };
    return { GET: handler, HEAD: handler };
  };
  const page = route(() => ({ body: html, type: "text/html; charset=utf-8", cache: "no-cache" }));
  return {
    // (Elysia strips a trailing slash from every route it hands Bun: /openapi/ is Elysia's 404.)
    [DOCS_PATH]: page,
    // Opened per request: a Blob kept by the routes counts its 4.35 MB as live heap at every
    // collection, and the heap grows to about 3x that before the next one (docs/performance.md).
    [SCALAR_ASSET_PATH]: route(() => ({
      body: Bun.file(SCALAR_BUNDLE_PATH),
      type: "text/javascript; charset=utf-8",
      cache: immutable,
    })),
    [DOCS_SCRIPT_PATH]: route(() => ({ body: script, type: "text/javascript; charset=utf-8", cache: immutable })),
    [FAVICON_PATH]: route(() => ({ body: FAVICON_SVG, type: "image/svg+xml", cache: "public, max-age=86400" })),
  };
}
