// Serves the dashboard: one page (src/web/dashboard/index.html), bundled by Bun with its
// scripts, styles and chart library, and inside the binary when compiled. Each view has a
// path of its own, so links and bookmarks open the right view directly.
import page from "./dashboard/index.html";
import { VIEW_PATHS } from "./dashboard/state.ts";

/**
 * Bun.serve static routes (given to Elysia as `serve.routes`): an HTML bundle only works as a
 * static route, and Elysia turns routes into handlers once any global hook exists. So Bun answers
 * these paths, with hashed asset URLs and ETags, before Elysia's hooks run; the page carries its
 * own CSP in a meta tag.
 */
export function dashboardRoutes(): Record<string, typeof page> {
  return Object.fromEntries(Object.values(VIEW_PATHS).map((path) => [path, page]));
}
