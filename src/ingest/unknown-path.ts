// POSTs to paths the service does not know: a script pointed at a wrong URL (`/upload/telemetry`,
// a typo, a proxy prefix). They stay 404, but are counted per path (metrics, and a list for the
// dashboard) and kept in the rejected-reports log, rate-limited, so the mistake is noticed and
// the reports can be looked at; an anonymous client cannot fill the log this way.
import type { Endpoint } from "../domain/rejection.ts";
import type { Metrics } from "../http/metrics.ts";
import type { ClientCosts, Network } from "../http/rate-limit.ts";
import type { Logger } from "../log.ts";
import type { GroupCommitWriter } from "../store/writer.ts";
import { readBody } from "./read-body.ts";

/** Distinct paths counted; later ones are counted as "(other)", so the list and the metric stay small. */
const MAX_PATHS = 50;
const MAX_PATH_LENGTH = 120;
/** Bodies logged: one per path per minute, and at most this many a minute in all. */
const LOG_EVERY_MS = 60_000;
const LOGGED_PER_MINUTE = 20;
const OTHER = "(other)";

export interface UnknownPath {
  path: string;
  count: number;
  first_seen: string;
  last_seen: string;
}

export function unknownPathTracker(deps: {
  writer: GroupCommitWriter;
  clock: () => number;
  metrics: Metrics;
  log: Logger;
  maxBodyBytes: number;
  paths: Record<Endpoint, string>;
  costs: ClientCosts;
}) {
  const { writer, clock, metrics, log, maxBodyBytes, paths, costs } = deps;
  const seen = new Map<string, { count: number; first: number; last: number; loggedAt: number }>();
  let minute = 0;
  let loggedThisMinute = 0;
  const hint = `the ingestion URLs are ${Object.values(paths).join(", ")}`;

  return {
    /** Counts a POST to an unknown path and, within the rate, keeps its body in the log (by its head past the client network's share). */
    async record(request: Request, path: string, client: Network | null): Promise<void> {
      const now = clock();
      const key = seen.has(path) || seen.size < MAX_PATHS ? path.slice(0, MAX_PATH_LENGTH) : OTHER;
      const entry = seen.get(key) ?? { count: 0, first: now, last: now, loggedAt: -Infinity };
      entry.count++;
      entry.last = now;
      seen.set(key, entry);
      metrics.unknownPathPosts.inc({ path: key });
      if (Math.floor(now / LOG_EVERY_MS) !== minute) {
        minute = Math.floor(now / LOG_EVERY_MS);
        loggedThisMinute = 0;
      }
      if (now - entry.loggedAt < LOG_EVERY_MS || loggedThisMinute >= LOGGED_PER_MINUTE) return;
      entry.loggedAt = now;
      loggedThisMinute++;
      const read = await readBody(request, maxBodyBytes).catch(() => null);
      const body = read?.ok ? read.bytes : new Uint8Array(0);
      const message = `POST to unknown path ${key} (${entry.count} so far); ${hint}`;
      log.warn("unknown_path", { path: key, count: entry.count });
      const headOnly = body.byteLength > 0 && !costs.log.take(client, body.byteLength, now);
      await writer.submit({
        kind: "reject",
        at: now,
        rejection: { endpoint: "unknown_path", reason: "unknown_path", field: null, message, randomId: null, body },
        ...(headOnly ? { headOnly } : {}),
      });
      if (headOnly) metrics.clientShareUsed.inc({ share: "log" });
      metrics.rejected.inc({ reason: "unknown_path" });
    },

    /** Paths seen since start, most frequent first. */
    list(): UnknownPath[] {
      return [...seen]
        .map(([path, e]) => ({
          path,
          count: e.count,
          first_seen: new Date(e.first).toISOString(),
          last_seen: new Date(e.last).toISOString(),
        }))
        .sort((a, b) => b.count - a.count || (a.path < b.path ? -1 : 1));
    },
  };
}
