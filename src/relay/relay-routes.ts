// The relay's admin API: its state, and pause, resume, requeue and discard (they act on the
// outbox every node shares). Under /api/admin/, so the admin token is needed (src/http/access.ts).
import { Elysia, t } from "elysia";
import { RelayJson } from "../http/health-routes.ts";
import { ErrorBody } from "../http/errors.ts";
import { RELAY_ACTIONS, type ResultFor, type WriteOp } from "../store/contract.ts";

const security = [{ bearer: [] }];

export function relayRoutes(deps: { health: () => Promise<RelayJson>; submit: <Op extends WriteOp>(op: Op) => Promise<ResultFor<Op>>; clock: () => number }) {
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
        response: { 200: t.Object({ action: t.String(), entries: t.Integer({ description: "entries requeued or discarded" }), relay: RelayJson }), 400: ErrorBody },
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
