// Serves the dashboard: one page (src/web/dashboard/index.html) with its scripts, styles and chart
// library, inside the binary when compiled. Each view has a path of its own, so links and
// bookmarks open the right view directly.
import page from "./dashboard/index.html";
import { VIEW_PATHS } from "./dashboard/state.ts";
import { ASSET_PREFIX, staticPage } from "./static-pages.ts";

/**
 * What the dashboard may load and who may frame it: everything from this server, scripts only
 * from its files (never inline), styles only from its stylesheet (widths are set through the
 * CSSOM, which a policy does not govern), no framing by any page.
 */
const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** Paths of the page itself (one per view) and of its assets. */
const DASHBOARD_PATHS = Object.values(VIEW_PATHS);
const ASSET_ROUTE = `${ASSET_PREFIX}:file`;

/**
 * Bun.serve routes (given to Elysia as `serve.routes`): Bun answers these paths before Elysia's
 * hooks run, so the page loads without the read token (it holds no data; its API calls need the
 * token) and our handlers add the security headers themselves (`headersFor`, from hardening.ts).
 * Other methods fall through to Elysia (404).
 */
export function dashboardRoutes(headersFor: (request: Request) => Record<string, string>) {
  const served = staticPage(page, { headersFor, csp: DASHBOARD_CSP });
  const html = { GET: served.html, HEAD: served.html };
  return {
    ...Object.fromEntries(DASHBOARD_PATHS.map((path) => [path, html])),
    [ASSET_ROUTE]: { GET: served.asset, HEAD: served.asset },
  };
}
