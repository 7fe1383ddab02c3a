// Alert state, history and the delivery queue in PostgreSQL, as in the SQLite engine (its
// alerts.ts): the writes run in the batch's transaction. One node evaluates and delivers at a
// time (the alert jobs take the store's lease), so these need no locks of their own.
import type { Sql } from "postgres";
import type { RejectReason } from "../../domain/rejection.ts";
import type {
  AlertDelivery,
  AlertEvent,
  AlertReads,
  AlertRuleMark,
  AlertSend,
  AlertState,
  AlertTransition,
} from "../contract/alerts.ts";
import type { RejectedReads } from "../contract/rejected.ts";
import type { ResultOf, WriteOp } from "../contract/store.ts";

type AlertOp<K extends WriteOp["kind"]> = Extract<WriteOp, { kind: K }>;
/** A connection inside a transaction (transaction.ts). */
type Tx = Sql;

async function enqueue(
  tx: Tx,
  eventId: number,
  message: string,
  channels: readonly string[],
  at: number,
): Promise<void> {
  for (const channel of channels) {
    await tx`INSERT INTO alert_outbox (event_id, channel, message, created_at, next_at, attempts, state) VALUES (${eventId}, ${channel}, ${message}, ${at}, ${at}, 0, 'pending')`;
  }
}

async function transition(tx: Tx, t: AlertTransition, at: number): Promise<number> {
  const sent = t.channels.length > 0;
  const [event] = await tx<{ id: number }[]>`
    INSERT INTO alert_events (rule, subject, status, at, message, notified_at, held_back)
    VALUES (${t.rule}, ${t.subject}, ${t.status}, ${at}, ${t.message}, ${sent ? at : null}, ${t.heldBack}) RETURNING id`;
  const eventId = event!.id;
  const status = t.status === "firing" ? "firing" : "ok";
  const lastSentAt = t.status === "firing" && sent ? at : null;
  // A resolve, or a firing held back, keeps the time of the last firing sent (the cooldown counts from it).
  await tx`
    INSERT INTO alert_states (rule, subject, status, since, event_id, notified, last_sent_at)
    VALUES (${t.rule}, ${t.subject}, ${status}, ${at}, ${eventId}, ${sent}, ${lastSentAt})
    ON CONFLICT (rule, subject) DO UPDATE SET status = excluded.status, since = excluded.since, event_id = excluded.event_id,
      notified = excluded.notified, last_sent_at = coalesce(excluded.last_sent_at, alert_states.last_sent_at)`;
  await enqueue(tx, eventId, t.message, t.channels, at);
  return eventId;
}

async function send(tx: Tx, s: AlertSend, at: number): Promise<void> {
  const [state] = await tx<{ eventId: number }[]>`
    UPDATE alert_states SET notified = TRUE, last_sent_at = ${at}
    WHERE rule = ${s.rule} AND subject = ${s.subject} AND status = 'firing' AND NOT notified RETURNING event_id AS "eventId"`;
  if (!state) return;
  await tx`UPDATE alert_events SET notified_at = ${at} WHERE id = ${state.eventId}`;
  await enqueue(tx, state.eventId, s.message, s.channels, at);
}

/** Applies an alert op inside the batch's transaction (writes.ts). */
export async function applyAlertOp(
  tx: Tx,
  op: AlertOp<"alert-round" | "alert-silence" | "alert-delivery" | "alert-forget">,
): Promise<ResultOf[typeof op.kind]> {
  switch (op.kind) {
    case "alert-round": {
      for (const { rule, summary } of op.rules) {
        await tx`INSERT INTO alert_rules (rule, evaluated_at, summary) VALUES (${rule}, ${op.at}, ${summary})
          ON CONFLICT (rule) DO UPDATE SET evaluated_at = excluded.evaluated_at, summary = excluded.summary`;
      }
      const events: number[] = [];
      for (const t of op.transitions) events.push(await transition(tx, t, op.at));
      for (const s of op.sends) await send(tx, s, op.at);
      return { kind: "alert-recorded", events };
    }
    case "alert-silence":
      await tx`INSERT INTO alert_rules (rule, silenced_until) VALUES (${op.rule}, ${op.until}) ON CONFLICT (rule) DO UPDATE SET silenced_until = excluded.silenced_until`;
      return { kind: "alert-silenced" };
    case "alert-delivery": {
      const set =
        op.result === "sent"
          ? tx`state = 'sent', sent_at = ${op.at}, last_error = NULL`
          : op.result === "retry"
            ? tx`next_at = ${op.nextAt ?? op.at}, last_error = ${op.error}`
            : tx`state = 'failed', last_error = ${op.error}`;
      const changed =
        await tx`UPDATE alert_outbox SET ${set}, attempts = attempts + 1 WHERE id = ${op.id} AND state = 'pending' RETURNING 1`;
      return { kind: "alert-delivery-marked", found: changed.length > 0 };
    }
    case "alert-forget": {
      const messages =
        await tx`DELETE FROM alert_outbox WHERE created_at < ${op.before} AND state <> 'pending' RETURNING 1`;
      const events = await tx`
        DELETE FROM alert_events e WHERE e.at < ${op.before}
          AND NOT EXISTS (SELECT 1 FROM alert_states s WHERE s.event_id = e.id)
          AND NOT EXISTS (SELECT 1 FROM alert_outbox o WHERE o.event_id = e.id) RETURNING 1`;
      return { kind: "alert-forgotten", events: events.length, messages: messages.length };
    }
  }
}

const DELIVERY = `id, event_id AS "eventId", channel, message, created_at AS "createdAt", next_at AS "nextAt", attempts, state, last_error AS "lastError", sent_at AS "sentAt"`;

export function createAlertReads(pg: Sql): AlertReads & Pick<RejectedReads, "rejectedCounts"> {
  return {
    alertStates: () =>
      pg<
        AlertState[]
      >`SELECT rule, subject, status, since, event_id AS "eventId", notified, last_sent_at AS "lastSentAt" FROM alert_states ORDER BY rule, subject`.then(
        (rows) => [...rows],
      ),

    alertRuleMarks: () =>
      pg<
        AlertRuleMark[]
      >`SELECT rule, silenced_until AS "silencedUntil", evaluated_at AS "evaluatedAt", summary FROM alert_rules ORDER BY rule`.then(
        (rows) => [...rows],
      ),

    async alertHistory({ limit, before, rule }) {
      const rows = await pg<Omit<AlertEvent, "deliveries">[]>`
        SELECT id, rule, subject, status, at, message, notified_at AS "notifiedAt", held_back AS "heldBack" FROM alert_events
        WHERE ${before === undefined ? pg`TRUE` : pg`id < ${before}`} AND ${rule === undefined ? pg`TRUE` : pg`rule = ${rule}`}
        ORDER BY id DESC LIMIT ${limit}`;
      if (rows.length === 0) return [];
      const deliveries = await pg<(AlertEvent["deliveries"][number] & { eventId: number })[]>`
        SELECT event_id AS "eventId", channel, state, attempts, last_error AS "lastError", sent_at AS "sentAt" FROM alert_outbox
        WHERE event_id IN ${pg(rows.map((r) => r.id))} ORDER BY id`;
      return rows.map((r) => ({
        ...r,
        deliveries: deliveries.filter((d) => d.eventId === r.id).map(({ eventId: _, ...d }) => d),
      }));
    },

    alertDue: (dueBy, limit) =>
      pg
        .unsafe<AlertDelivery[]>(
          `SELECT ${DELIVERY} FROM alert_outbox WHERE state = 'pending' AND next_at <= $1 ORDER BY next_at, id LIMIT $2`,
          [dueBy, limit],
        )
        .then((rows) => [...rows]),

    alertQueue: () =>
      pg<
        { channel: string; pending: number }[]
      >`SELECT channel, count(*)::int AS pending FROM alert_outbox WHERE state = 'pending' GROUP BY channel ORDER BY channel`.then(
        (rows) => [...rows],
      ),

    async rejectedCounts(from, to) {
      const rows = await pg<{ reason: RejectReason; n: number }[]>`
        SELECT reason, count(*)::int AS n FROM rejected_reports WHERE received_at >= ${from} AND received_at < ${to} GROUP BY reason`;
      return Object.fromEntries(rows.map((r) => [r.reason, r.n])) as Partial<Record<RejectReason, number>>;
    },
  };
}
