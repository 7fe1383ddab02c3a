// Serves a page bundled from an HTML file (its HTML, scripts, styles, icons) with our own handlers,
// so every answer carries the security headers, in `bun run` and in the compiled binary alike.
//
// Where the files come from:
//   compiled binary  `bun build --compile` bundles every imported .html file ahead of time; the
//                    import then lists the output files (`HTMLBundle.files`, inside the executable)
//                    with their content types. Their HTML refers to them as "/<name>": rewritten
//                    to "<asset prefix><name>" ("/assets/" for the dashboard).
//   bun run          the import only names the source file: Bun.build bundles it in memory on the
//                    first request (~20-60 ms), with publicPath "/assets/".
// Either way a page is its HTML plus assets with hashed names, served by `staticPage` below: the
// HTML revalidated on every load (ETag, 304), assets cached for a year (their names change with
// their content), text gzip-compressed once when the browser accepts it.
import type { HTMLBundle } from "bun";

export const ASSET_PREFIX = "/assets/";

interface Asset {
  type: string;
  body: Bytes;
  /** The body gzip-compressed, when that is smaller (text); null otherwise. */
  gzip: Bytes | null;
  etag: string;
}

interface BuiltPage {
  html: Asset;
  /** By file name (no directory): "chunk-a5h3knzy.js". */
  assets: Map<string, Asset>;
}

type Bytes = Uint8Array<ArrayBuffer>;

const TEXT = /^(text\/|application\/(javascript|json)|image\/svg)/;

function asset(type: string, body: Bytes): Asset {
  const etag = Bun.hash(body).toString(36);
  const packed = TEXT.test(type) ? Bun.gzipSync(body, { level: 9 }) : null;
  return { type, body, gzip: packed && packed.byteLength < body.byteLength ? packed : null, etag };
}

const baseName = (path: string): string => path.slice(path.lastIndexOf("/") + 1);
const encoder = new TextEncoder();

/** A compiled binary's files: read from the executable, the HTML's references moved under /assets/. */
async function fromCompiled(
  files: NonNullable<HTMLBundle["files"]>,
  index: string,
  prefix: string,
): Promise<BuiltPage> {
  const names = files.filter((f) => f.path !== index).map((f) => baseName(f.path));
  const assets = new Map<string, Asset>();
  let html: Asset | null = null;
  for (const file of files) {
    const type = file.headers["content-type"];
    if (file.path === index) {
      let text = await Bun.file(file.path).text();
      for (const name of names) text = text.replaceAll(`"/${name}"`, `"${prefix}${name}"`);
      html = asset(type, encoder.encode(text));
    } else {
      assets.set(baseName(file.path), asset(type, new Uint8Array(await Bun.file(file.path).arrayBuffer())));
    }
  }
  if (!html) throw new Error(`the compiled page ${index} is not among its files`);
  return { html, assets };
}

/** `bun run`: bundle the page now, in memory. */
async function fromSource(index: string, prefix: string): Promise<BuiltPage> {
  const result = await Bun.build({ entrypoints: [index], minify: true, publicPath: prefix, target: "browser" });
  if (!result.success) throw new AggregateError(result.logs, `could not bundle ${index}`);
  const assets = new Map<string, Asset>();
  let html: Asset | null = null;
  for (const out of result.outputs) {
    const built = asset(out.type, new Uint8Array(await out.arrayBuffer()));
    if (out.path.endsWith(".html") && out.kind === "entry-point" && out.loader === "html") html = built;
    else assets.set(baseName(out.path), built);
  }
  if (!html) throw new Error(`bundling ${index} gave no HTML`);
  return { html, assets };
}

function buildPage(page: HTMLBundle, prefix: string): Promise<BuiltPage> {
  return page.files ? fromCompiled(page.files, page.index, prefix) : fromSource(page.index, prefix);
}

/** True when the request's If-None-Match names this ETag (or "*"). */
function notModified(request: Request, etag: string): boolean {
  const given = request.headers.get("if-none-match");
  if (given === null) return false;
  return given.split(",").some((tag) => {
    const t = tag.trim().replace(/^W\//, "");
    return t === "*" || t === etag;
  });
}

const acceptsGzip = (request: Request): boolean => /\bgzip\b/.test(request.headers.get("accept-encoding") ?? "");

/** One asset as the answer to `request`: 304 when the browser has it, gzip when it takes it. */
function answer(request: Request, a: Asset, headers: Record<string, string>, cacheControl: string): Response {
  const gzip = a.gzip !== null && acceptsGzip(request);
  const etag = `"${a.etag}${gzip ? "-gz" : ""}"`;
  const h: Record<string, string> = { ...headers, etag, "cache-control": cacheControl };
  if (a.gzip !== null) h.vary = headers.vary ? `${headers.vary}, Accept-Encoding` : "Accept-Encoding";
  if (notModified(request, etag)) return new Response(null, { status: 304, headers: h });
  h["content-type"] = a.type;
  if (gzip) h["content-encoding"] = "gzip";
  const body = gzip ? a.gzip! : a.body;
  return new Response(request.method === "HEAD" ? null : body, {
    headers: { ...h, "content-length": String(body.byteLength) },
  });
}

export interface StaticPageOptions {
  /** The headers every answer carries (security headers, CORS), as hardening.ts gives them. */
  headersFor: (request: Request) => Record<string, string>;
  /** The page's Content-Security-Policy (replaces the general one). */
  csp: string;
  /** Where its assets are served; ASSET_PREFIX (the dashboard's) unless given. */
  assetPrefix?: string;
}

type Handler = (request: Request) => Promise<Response>;

/**
 * Handlers for a page's HTML and its assets. The bundle is built (or read from the executable)
 * on the first request and kept; a failure is answered 500 and tried again on the next request.
 */
export function staticPage(page: HTMLBundle, o: StaticPageOptions): { html: Handler; asset: Handler } {
  let built: Promise<BuiltPage> | null = null;
  const prefix = o.assetPrefix ?? ASSET_PREFIX;
  const load = (): Promise<BuiltPage> => {
    built ??= buildPage(page, prefix).catch((e: unknown) => {
      built = null;
      throw e;
    });
    return built;
  };
  const headers = (request: Request) => ({ ...o.headersFor(request), "content-security-policy": o.csp });
  const fault = (request: Request, e: unknown) =>
    new Response(
      JSON.stringify({
        error: "internal",
        message: `the page could not be built: ${e instanceof Error ? e.message : String(e)}`,
      }),
      {
        status: 500,
        headers: { ...headers(request), "content-type": "application/json" },
      },
    );
  return {
    async html(request) {
      try {
        // Revalidated on every load: it names the current assets.
        return answer(request, (await load()).html, headers(request), "no-cache");
      } catch (e) {
        return fault(request, e);
      }
    },
    async asset(request) {
      let p: BuiltPage;
      try {
        p = await load();
      } catch (e) {
        return fault(request, e);
      }
      const path = new URL(request.url).pathname;
      const found = path.startsWith(prefix) ? p.assets.get(path.slice(prefix.length)) : undefined;
      if (!found) {
        return new Response(JSON.stringify({ error: "not_found", message: `no asset ${path}` }), {
          status: 404,
          headers: { ...headers(request), "content-type": "application/json" },
        });
      }
      // Hashed names: a new build has new names, so a year-long cache is always right.
      return answer(request, found, headers(request), "public, max-age=31536000, immutable");
    },
  };
}
