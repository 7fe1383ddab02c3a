// GET /healthz: is the service up, and can it write?
import { Elysia, t } from "elysia";
import type { WriterStats } from "../store/writer.ts";

const Health = t.Object(
  {
    status: t.Union([t.Literal("ok"), t.Literal("degraded")]),
    version: t.String(),
    uptime_s: t.Number(),
    storage: t.Object({
      writable: t.Boolean({ description: "false while the last write attempt failed (disk full, read-only)" }),
      last_error: t.Nullable(t.String()),
      batches: t.Integer(),
      writes: t.Integer(),
    }),
  },
  { title: "Health" },
);

export function healthRoutes(deps: { version: string; writerStats: Readonly<WriterStats>; clock: () => number }) {
  const started = deps.clock();
  return new Elysia({ name: "health" }).get(
    "/healthz",
    ({ status }) => {
      const s = deps.writerStats;
      const writable = s.lastError === null;
      const body = {
        status: writable ? ("ok" as const) : ("degraded" as const),
        version: deps.version,
        uptime_s: Math.round((deps.clock() - started) / 1000),
        storage: { writable, last_error: s.lastError, batches: s.batches, writes: s.writes },
      };
      return writable ? status(200, body) : status(503, body);
    },
    { response: { 200: Health, 503: Health }, detail: { tags: ["ops"], summary: "Liveness and storage writability" } },
  );
}
