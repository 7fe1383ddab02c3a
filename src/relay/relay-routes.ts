// The relay's admin API: its state, and pause, resume, requeue and discard (they act on the
// outbox every node shares). Under /api/admin/, so the admin token is needed (src/http/access.ts).
// Its state's shape (RelayJson) is also the relay's section of /healthz.
import { Elysia, t, type Static } from "elysia";
import { ErrorBody } from "../http/errors.ts";
import { RELAY_ACTIONS } from "../store/contract/relay.ts";
import type { ResultFor, WriteOp } from "../store/contract/store.ts";

const Bytes = (description: string) => t.Integer({ description });

/** The relay to an upstream collector, in /healthz and the admin API: this node's sender and the outbox every node shares. */
export const RelayJson = t.Object(
  {
    enabled: t.Boolean({ description: "whether this node relays (--relay-url set)" }),
    url: t.Nullable(t.String({ description: "the upstream (--relay-url), without a password" })),
    state: t.Union(
      [
        t.Literal("off"),
        t.Literal("idle"),
        t.Literal("sending"),
        t.Literal("backing_off"),
        t.Literal("paused"),
        t.Literal("stopped"),
      ],
      {
        description: "this node's sender: backing_off after failed attempts, until retry_at",
      },
    ),
    paused: t.Boolean({ description: "paused by an admin (every node): reports are still queued, none are sent" }),
    entries: t.Integer({ description: "reports in the outbox, waiting to be sent" }),
    bytes: Bytes("bytes of their bodies"),
    max_bytes: Bytes("the bound (--relay-max-outbox); past it the oldest entries are dropped"),
    waiting: t.Integer({ description: "entries held back until their execution's start report" }),
    refused: t.Integer({
      description: "entries the upstream refused (400, 413, 422): kept, not sent again until requeued",
    }),
    oldest_age_s: t.Nullable(t.Number({ description: "seconds since the next entry to send was queued" })),
    head_attempts: t.Integer({ description: "failed attempts of the next entry to send" }),
    sent: t.Integer({ description: "entries delivered (a 2xx from the upstream), since the database was created" }),
    failed_attempts: t.Integer(),
    refusals: t.Integer(),
    dropped: t.Object({
      bound: t.Integer({ description: "oldest entries dropped at the bound" }),
      discarded: t.Integer({ description: "entries discarded by an admin" }),
    }),
    last_sent_at: t.Nullable(t.String({ format: "date-time" })),
    last_error: t.Nullable(t.String({ description: "this node's last failed attempt" })),
    last_error_at: t.Nullable(t.String({ format: "date-time" })),
    retry_at: t.Nullable(
      t.String({ format: "date-time", description: "while backing off: when the next attempt is due" }),
    ),
  },
  { title: "Relay" },
);
export type RelayJson = Static<typeof RelayJson>;

const security = [{ bearer: [] }];

export function relayRoutes(deps: {
  health: () => Promise<RelayJson>;
  submit: <Op extends WriteOp>(op: Op) => Promise<ResultFor<Op>>;
  clock: () => number;
}) {
  const tags = ["admin"];
  return new Elysia({ name: "relay-admin" })
    .get("/api/admin/relay", () => deps.health(), {
      response: { 200: RelayJson },
      detail: { tags, security, summary: "The relay to an upstream collector: this node's sender and the outbox" },
    })
    .post(
      "/api/admin/relay/:action",
      async ({ params }) => {
        const result = await deps.submit({ kind: "relay-control", action: params.action, at: deps.clock() });
        return { action: params.action, entries: result.entries, relay: await deps.health() };
      },
      {
        params: t.Object({ action: t.UnionEnum(RELAY_ACTIONS, { description: "what to do with the outbox" }) }),
        response: {
          200: t.Object({
            action: t.String(),
            entries: t.Integer({ description: "entries requeued or discarded" }),
            relay: RelayJson,
          }),
          400: ErrorBody,
        },
        detail: {
          tags,
          security,
          summary: "Pause, resume, requeue or discard the relay's outbox (every node)",
          description:
            "pause: reports are still queued, none are sent, until resume. requeue: entries the upstream refused are sent again. discard: every entry is dropped (counted as discarded); discard-refused: only the refused ones.",
        },
      },
    );
}
