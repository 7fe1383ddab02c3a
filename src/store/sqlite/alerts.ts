// Alert state, history and the delivery queue in SQLite (src/alerts/ decides; this keeps): the
// writes run inside the batch's transaction like every other op, the reads are plain queries.
import { and, count, desc, eq, inArray, lt, lte, ne, notInArray, sql, type SQL } from "drizzle-orm";
import type { RejectReason } from "../../domain/rejection.ts";
import type { AlertDelivery, AlertEvent, AlertReads, AlertSend, AlertTransition } from "../contract/alerts.ts";
import type { RejectedReads } from "../contract/rejected.ts";
import type { ResultOf, WriteOp } from "../contract/store.ts";
import type { Db } from "./database.ts";
import { alertEvents, alertOutbox, alertRules, alertStates, rejectedReports } from "./schema.ts";

type AlertOp<K extends WriteOp["kind"]> = Extract<WriteOp, { kind: K }>;

/** Queues `message` for each channel, due at once. */
function enqueue(db: Db, eventId: number, message: string, channels: readonly string[], at: number): void {
  for (const channel of channels) {
    db.insert(alertOutbox)
      .values({
        eventId,
        channel,
        message,
        createdAt: at,
        nextAt: at,
        attempts: 0,
        state: "pending",
        lastError: null,
        sentAt: null,
      })
      .run();
  }
}

/** A rule's subject changed state: the event recorded, the state kept, its message queued for the channels. */
function transition(db: Db, t: AlertTransition, at: number): number {
  const sent = t.channels.length > 0;
  const [event] = db
    .insert(alertEvents)
    .values({
      rule: t.rule,
      subject: t.subject,
      status: t.status,
      at,
      message: t.message,
      notifiedAt: sent ? at : null,
      heldBack: t.heldBack,
    })
    .returning({ id: alertEvents.id })
    .all();
  const eventId = event!.id;
  const status = t.status === "firing" ? "firing" : "ok";
  const lastSentAt = t.status === "firing" && sent ? at : null;
  db.insert(alertStates)
    .values({ rule: t.rule, subject: t.subject, status, since: at, eventId, notified: sent, lastSentAt })
    .onConflictDoUpdate({
      target: [alertStates.rule, alertStates.subject],
      // A resolve, or a firing held back, keeps the time of the last firing sent (the cooldown counts from it).
      set: { status, since: at, eventId, notified: sent, lastSentAt: lastSentAt ?? sql`${alertStates.lastSentAt}` },
    })
    .run();
  enqueue(db, eventId, t.message, t.channels, at);
  return eventId;
}

/** A firing held back (a silence, a cooldown) sent now: once, while it still fires. */
function send(db: Db, s: AlertSend, at: number): void {
  const state = db
    .select()
    .from(alertStates)
    .where(and(eq(alertStates.rule, s.rule), eq(alertStates.subject, s.subject)))
    .get();
  if (!state || state.status !== "firing" || state.notified) return;
  db.update(alertStates)
    .set({ notified: true, lastSentAt: at })
    .where(and(eq(alertStates.rule, s.rule), eq(alertStates.subject, s.subject)))
    .run();
  db.update(alertEvents).set({ notifiedAt: at }).where(eq(alertEvents.id, state.eventId)).run();
  enqueue(db, state.eventId, s.message, s.channels, at);
}

function round(db: Db, op: AlertOp<"alert-round">): ResultOf["alert-round"] {
  for (const { rule, summary } of op.rules) {
    db.insert(alertRules)
      .values({ rule, silencedUntil: null, evaluatedAt: op.at, summary })
      .onConflictDoUpdate({ target: alertRules.rule, set: { evaluatedAt: op.at, summary } })
      .run();
  }
  const events = op.transitions.map((t) => transition(db, t, op.at));
  for (const s of op.sends) send(db, s, op.at);
  return { kind: "alert-recorded", events };
}

function silence(db: Db, op: AlertOp<"alert-silence">): ResultOf["alert-silence"] {
  db.insert(alertRules)
    .values({ rule: op.rule, silencedUntil: op.until, evaluatedAt: null, summary: null })
    .onConflictDoUpdate({ target: alertRules.rule, set: { silencedUntil: op.until } })
    .run();
  return { kind: "alert-silenced" };
}

function delivery(db: Db, op: AlertOp<"alert-delivery">): ResultOf["alert-delivery"] {
  const pending = and(eq(alertOutbox.id, op.id), eq(alertOutbox.state, "pending"));
  const set =
    op.result === "sent"
      ? { state: "sent" as const, sentAt: op.at, lastError: null }
      : op.result === "retry"
        ? { nextAt: op.nextAt ?? op.at, lastError: op.error }
        : { state: "failed" as const, lastError: op.error };
  const changed = db
    .update(alertOutbox)
    .set({ ...set, attempts: sql`${alertOutbox.attempts} + 1` })
    .where(pending)
    .returning({ id: alertOutbox.id })
    .all();
  return { kind: "alert-delivery-marked", found: changed.length > 0 };
}

function forget(db: Db, op: AlertOp<"alert-forget">): ResultOf["alert-forget"] {
  const current = db.select({ id: alertStates.eventId }).from(alertStates);
  const messages = db
    .delete(alertOutbox)
    .where(and(lt(alertOutbox.createdAt, op.before), ne(alertOutbox.state, "pending")))
    .returning({ id: alertOutbox.id })
    .all().length;
  const events = db
    .delete(alertEvents)
    .where(
      and(
        lt(alertEvents.at, op.before),
        notInArray(alertEvents.id, current),
        sql`NOT EXISTS (SELECT 1 FROM ${alertOutbox} WHERE ${alertOutbox.eventId} = ${alertEvents.id})`,
      ),
    )
    .returning({ id: alertEvents.id })
    .all().length;
  return { kind: "alert-forgotten", events, messages };
}

/** Synchronous, inside the caller's transaction (writes.ts). */
export function createAlertWrites(db: Db) {
  return {
    round: (op: AlertOp<"alert-round">) => round(db, op),
    silence: (op: AlertOp<"alert-silence">) => silence(db, op),
    delivery: (op: AlertOp<"alert-delivery">) => delivery(db, op),
    forget: (op: AlertOp<"alert-forget">) => forget(db, op),
  };
}

const deliveryColumns = {
  channel: alertOutbox.channel,
  state: alertOutbox.state,
  attempts: alertOutbox.attempts,
  lastError: alertOutbox.lastError,
  sentAt: alertOutbox.sentAt,
};

/** What the alert job reads: its own tables, and the rejected-reports log counted by reason. */
type AlertsRead = AlertReads & Pick<RejectedReads, "rejectedCounts">;

/** Synchronous reads; store.ts makes them the contract's asynchronous AlertReads. */
export function createAlertReads(db: Db): {
  [K in keyof AlertsRead]: (...args: Parameters<AlertsRead[K]>) => Awaited<ReturnType<AlertsRead[K]>>;
} {
  return {
    alertStates: () => db.select().from(alertStates).orderBy(alertStates.rule, alertStates.subject).all(),

    alertRuleMarks: () => db.select().from(alertRules).orderBy(alertRules.rule).all(),

    alertHistory({ limit, before, rule }) {
      const where: SQL[] = [];
      if (before !== undefined) where.push(lt(alertEvents.id, before));
      if (rule !== undefined) where.push(eq(alertEvents.rule, rule));
      const rows = db
        .select()
        .from(alertEvents)
        .where(and(...where))
        .orderBy(desc(alertEvents.id))
        .limit(limit)
        .all();
      if (rows.length === 0) return [];
      const deliveries = db
        .select({ eventId: alertOutbox.eventId, ...deliveryColumns })
        .from(alertOutbox)
        .where(
          inArray(
            alertOutbox.eventId,
            rows.map((r) => r.id),
          ),
        )
        .orderBy(alertOutbox.id)
        .all();
      return rows.map(
        (r): AlertEvent => ({
          ...r,
          deliveries: deliveries.filter((d) => d.eventId === r.id).map(({ eventId: _, ...d }) => d),
        }),
      );
    },

    alertDue: (dueBy, limit): AlertDelivery[] =>
      db
        .select()
        .from(alertOutbox)
        .where(and(eq(alertOutbox.state, "pending"), lte(alertOutbox.nextAt, dueBy)))
        .orderBy(alertOutbox.nextAt, alertOutbox.id)
        .limit(limit)
        .all(),

    alertQueue: () =>
      db
        .select({ channel: alertOutbox.channel, pending: count() })
        .from(alertOutbox)
        .where(eq(alertOutbox.state, "pending"))
        .groupBy(alertOutbox.channel)
        .orderBy(alertOutbox.channel)
        .all(),

    rejectedCounts(from, to) {
      const rows = db
        .select({ reason: rejectedReports.reason, n: count() })
        .from(rejectedReports)
        .where(and(sql`${rejectedReports.receivedAt} >= ${from}`, lt(rejectedReports.receivedAt, to)))
        .groupBy(rejectedReports.reason)
        .all();
      return Object.fromEntries(rows.map((r) => [r.reason, r.n])) as Partial<Record<RejectReason, number>>;
    },
  };
}
