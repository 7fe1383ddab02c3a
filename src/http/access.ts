// Who may do what over HTTP: ingestion is open (installer scripts send no credential), reads
// need the read token when one is set, admin actions always need the admin token.
import { createHash, timingSafeEqual } from "node:crypto";

export type Access = "open" | "read" | "admin";

export function accessOf(method: string, path: string): Access {
  if (method === "OPTIONS") return "open";
  if (path.startsWith("/api/admin/") || method === "DELETE") return "admin";
  // Every other POST is a report: to /telemetry, /upload, /upload/updatestatus, or to a wrong
  // path, which must answer 404 and be counted (a script pointed at a wrong URL), not 401.
  if (method === "POST") return "open";
  if (path === "/healthz") return "open";
  // The public stats page and JSON exist only when published (--public-stats); otherwise 404.
  if (path === "/public" || path.startsWith("/public/")) return "open";
  return "read";
}

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Compares in constant time (equal-length digests), so the token cannot be guessed byte by byte. */
export function tokenMatches(given: string | null, expected: string): boolean {
  return given !== null && timingSafeEqual(digest(given), digest(expected));
}

function bearerToken(request: Request): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "");
  return m ? m[1]! : null;
}

export type Denial = { status: 401 | 403; error: "unauthorized" | "forbidden"; message: string };

export function checkAccess(
  request: Request,
  path: string,
  tokens: { readToken: string | null; adminToken: string | null },
): Denial | null {
  const access = accessOf(request.method, path);
  if (access === "open") return null;
  const given = bearerToken(request);
  if (access === "admin") {
    if (tokens.adminToken === null)
      return {
        status: 403,
        error: "forbidden",
        message: "the admin API is off: start the server with INSTALLSTATS_ADMIN_TOKEN set",
      };
    return tokenMatches(given, tokens.adminToken)
      ? null
      : { status: 401, error: "unauthorized", message: "admin actions need 'Authorization: Bearer <admin token>'" };
  }
  if (tokens.readToken === null) return null;
  // The admin token can read too.
  if (tokenMatches(given, tokens.readToken) || (tokens.adminToken !== null && tokenMatches(given, tokens.adminToken)))
    return null;
  return { status: 401, error: "unauthorized", message: "reads need 'Authorization: Bearer <read token>'" };
}
