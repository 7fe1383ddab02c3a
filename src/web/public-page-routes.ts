// Serves the public stats page (src/web/public/index.html) when --public-stats is on: its HTML and
// assets, like the dashboard's, inside the binary when compiled. It holds no data: it reads
// /public/stats.json, which src/read/native/public-stats-routes.ts answers.
import page from "./public/index.html";
import { staticPage } from "./static-pages.ts";

/** Everything from this server, scripts and styles only from its files, never framed. */
const PUBLIC_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const PUBLIC_ASSETS = "/public/assets/";

/** Bun.serve routes (as `serve.routes`), answered before Elysia's hooks: no token is asked for. */
export function publicPageRoutes(headersFor: (request: Request) => Record<string, string>) {
  const served = staticPage(page, { headersFor, csp: PUBLIC_CSP, assetPrefix: PUBLIC_ASSETS });
  return {
    "/public": { GET: served.html, HEAD: served.html },
    [`${PUBLIC_ASSETS}:file`]: { GET: served.asset, HEAD: served.asset },
  };
}
