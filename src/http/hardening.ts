// Security headers on every response, CORS only for configured origins, access control.
import { Elysia } from "elysia";
import { errorBody } from "./errors.ts";
import { checkAccess } from "./access.ts";

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=()",
  // Everything the pages need comes from this server; inline styles and scripts are what the
  // bundled docs page uses.
  "content-security-policy":
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
} as const;

export interface HardeningOptions {
  readToken: string | null;
  adminToken: string | null;
  /** [] = no cross-origin reads; ["*"] = any origin. */
  corsOrigins: readonly string[];
}

/** The path of an absolute request URL, without parsing all of it (this runs for every request). */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const end = url.indexOf("?", start);
  return url.slice(start, end < 0 ? undefined : end);
}

/** The CORS headers an answer to `request` carries: none unless its origin is allowed. */
function corsPolicy(o: HardeningOptions) {
  const cors = o.corsOrigins.length > 0;
  const anyOrigin = o.corsOrigins.includes("*");
  return (request: Request): Record<string, string> | null => {
    // Without CORS configured the Origin header is never looked at (reading headers has a cost).
    const origin = cors ? request.headers.get("origin") : null;
    if (origin === null || !(anyOrigin || o.corsOrigins.includes(origin))) return null;
    return anyOrigin
      ? { "access-control-allow-origin": "*" }
      : { "access-control-allow-origin": origin, vary: "Origin" };
  };
}

/** Every header an answer to `request` carries besides its own (security headers, CORS), as a new object. */
export function responseHeaders(o: HardeningOptions): (request: Request) => Record<string, string> {
  const corsOf = corsPolicy(o);
  return (request) => {
    const cors = corsOf(request);
    return cors ? { ...SECURITY_HEADERS, ...cors } : { ...SECURITY_HEADERS };
  };
}

export function hardening(o: HardeningOptions) {
  const corsOf = corsPolicy(o);

  return new Elysia({ name: "hardening" })
    .onRequest(({ request, set }) => {
      Object.assign(set.headers, SECURITY_HEADERS);
      const cors = corsOf(request);
      if (cors) {
        Object.assign(set.headers, cors);
        if (request.method === "OPTIONS") {
          set.headers["access-control-allow-methods"] = "GET, POST, DELETE, OPTIONS";
          set.headers["access-control-allow-headers"] = "Authorization, Content-Type";
          set.headers["access-control-max-age"] = "86400";
          set.status = 204;
          return "";
        }
      }
      const denied = checkAccess(request, pathOf(request.url), o);
      if (denied) {
        set.status = denied.status;
        if (denied.status === 401) set.headers["www-authenticate"] = 'Bearer realm="installstats"';
        set.headers["content-type"] = "application/json";
        return errorBody(denied.error, denied.message);
      }
    })
    .as("global");
}
