// GET /healthz: is the service up, can it write, is its storage sound, and where do the budgets stand?
import type { TSchema } from "@sinclair/typebox";
import { Elysia, t, type Static } from "elysia";
import type { BudgetStatus } from "../store/contract/maintenance.ts";
import type { StorageHealth } from "../store/engine.ts";
import type { WriterStats } from "../store/writer.ts";

const Bytes = (description: string) => t.Integer({ description });

const BudgetsJson = t.Object(
  {
    log: t.Object({
      limit_bytes: Bytes("the rejected-reports log's budget (--log-budget)"),
      used_bytes: Bytes("what the log uses: stored bodies (compressed, each once) and entries"),
      entries: t.Integer(),
      body_bytes: Bytes("whole bodies as stored (compressed)"),
      body_raw_bytes: Bytes("the same bodies as received"),
      head_only: t.Integer({
        description: "entries that keep only the first 256 bytes of their body (past the budget)",
      }),
      deduplicated: t.Integer({
        description: "entries that shared a body already stored (since the database was created)",
      }),
      truncated: t.Integer({ description: "entries kept with their body's head only" }),
      evicted: t.Integer({ description: "head-only entries removed, oldest first, to make room" }),
      dropped: t.Integer({ description: "entries not kept at all, only counted (the log was full)" }),
      dropped_bytes: Bytes("body bytes not kept (truncated or dropped)"),
    }),
    held: t.Object({
      limit_bytes: Bytes("the held reports' budget (--held-budget)"),
      used_bytes: t.Integer(),
      count: t.Integer({ description: "final reports waiting for their start report" }),
      expired: t.Integer({ description: "applied on their own after --held-expiry" }),
      overflowed: t.Integer({
        description: "applied on their own, oldest first, because held reports were past their budget",
      }),
    }),
  },
  { description: "what is kept besides executions, against its budget; counters since the database was created" },
);

/** The answer of /healthz but for the relay's section, whose shape is the relay's (src/relay/routes.ts). */
const HealthBesidesRelay = t.Object(
  {
    status: t.Union([t.Literal("ok"), t.Literal("degraded")]),
    time: t.String({
      format: "date-time",
      description:
        "the server's clock, UTC, to the second (RFC 3339, as the community service's health check sends it)",
    }),
    version: t.String(),
    uptime_s: t.Number(),
    storage: t.Object({
      writable: t.Boolean({
        description:
          "false while the last write attempt failed (disk full, read-only), or for good once the database files were replaced or removed under the server",
      }),
      last_error: t.Nullable(t.String()),
      batches: t.Integer(),
      writes: t.Integer(),
      problems: t.Optional(
        t.Array(t.String(), {
          description:
            "what is wrong with storage, one sentence each: files replaced or removed, damage met by a read, damage found by the integrity check",
        }),
      ),
      integrity: t.Optional(
        t.Nullable(
          t.Object(
            {
              ok: t.Boolean(),
              checked_at: t.String({ format: "date-time" }),
              ms: t.Integer(),
              problems: t.Array(t.String()),
            },
            {
              description:
                "SQLite's quick_check, run once in the background when the server starts; null until it finished",
            },
          ),
        ),
      ),
      budgets: t.Optional(t.Nullable(BudgetsJson)),
      database: t.Optional(
        t.Object(
          {
            engine: t.Union([t.Literal("sqlite"), t.Literal("postgres")]),
            location: t.String({ description: "the --db location; a URL without its password" }),
            replica: t.Nullable(
              t.Object({
                location: t.String(),
                lag_s: t.Nullable(
                  t.Number({ description: "replay lag in seconds; null while the replica does not answer" }),
                ),
                reads_from: t.Union([t.Literal("replica"), t.Literal("primary")]),
                problem: t.Nullable(t.String()),
              }),
            ),
          },
          { description: "which database this node uses, and where its reads go (--read-db)" },
        ),
      ),
    }),
  },
  { title: "Health" },
);

const budgetsJson = (b: BudgetStatus): Static<typeof BudgetsJson> => ({
  log: {
    limit_bytes: b.log.limitBytes,
    used_bytes: b.log.usedBytes,
    entries: b.log.entries,
    body_bytes: b.log.bodyBytes,
    body_raw_bytes: b.log.bodyRawBytes,
    head_only: b.log.headOnly,
    deduplicated: b.log.deduplicated,
    truncated: b.log.truncated,
    evicted: b.log.evicted,
    dropped: b.log.dropped,
    dropped_bytes: b.log.droppedBytes,
  },
  held: {
    limit_bytes: b.held.limitBytes,
    used_bytes: b.held.usedBytes,
    count: b.held.count,
    expired: b.held.expired,
    overflowed: b.held.overflowed,
  },
});

export function healthRoutes(deps: {
  version: string;
  writerStats: Readonly<WriterStats>;
  clock: () => number;
  /** The engine's view of its storage (Engine.health); without it only the writer's is shown. */
  storage?: () => Promise<StorageHealth>;
  /** The relay's section: its schema and its state (src/relay/); null when the state cannot be read. */
  relay: { schema: TSchema; read: () => Promise<unknown> };
}) {
  const started = deps.clock();
  const Health = t.Object(
    {
      ...HealthBesidesRelay.properties,
      relay: t.Optional(
        t.Nullable(deps.relay.schema, {
          description:
            "the relay to an upstream collector; an upstream that fails does not make this node degraded; null when it could not be read",
        }),
      ),
    },
    { title: "Health" },
  );
  return new Elysia({ name: "health" }).get(
    "/healthz",
    async ({ status }) => {
      const s = deps.writerStats;
      const engine = deps.storage ? await deps.storage() : null;
      const writable = s.lastError === null && (engine?.writable ?? true);
      const problems = engine?.problems ?? [];
      const healthy = writable && problems.length === 0;
      const integrity = engine?.integrity;
      const body = {
        status: healthy ? ("ok" as const) : ("degraded" as const),
        time: `${new Date(deps.clock()).toISOString().slice(0, 19)}Z`,
        version: deps.version,
        uptime_s: Math.round((deps.clock() - started) / 1000),
        storage: {
          writable,
          last_error: s.lastError ?? (engine && !engine.writable ? (engine.problems[0] ?? null) : null),
          batches: s.batches,
          writes: s.writes,
          ...(engine
            ? {
                problems,
                integrity: integrity
                  ? {
                      ok: integrity.ok,
                      checked_at: new Date(integrity.checkedAt).toISOString(),
                      ms: integrity.ms,
                      problems: integrity.problems,
                    }
                  : null,
                budgets: engine.budgets ? budgetsJson(engine.budgets) : null,
                database: {
                  engine: engine.database.engine,
                  location: engine.database.location,
                  replica: engine.database.replica
                    ? {
                        location: engine.database.replica.location,
                        lag_s: engine.database.replica.lagS,
                        reads_from: engine.database.replica.readsFrom,
                        problem: engine.database.replica.problem,
                      }
                    : null,
                },
              }
            : {}),
        },
        relay: await deps.relay.read(),
      };
      return healthy ? status(200, body) : status(503, body);
    },
    {
      response: { 200: Health, 503: Health },
      detail: {
        tags: ["ops"],
        summary: "Liveness, storage writability and soundness, budgets",
        description:
          "503 while storage cannot take writes (disk full, read-only, database files replaced or removed under the server) or is known to be damaged. `storage.budgets` shows the rejected-reports log and the held reports against their budgets.",
      },
    },
  );
}
