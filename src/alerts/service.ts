// Alerts as a service: evaluation rounds and deliveries (scheduled jobs, each under the store's
// lease, so once per cluster), test sends, silences, and what the API and CLI list. State,
// history and the queue of messages are in the database (Store contract), never in memory alone:
// a restart or another node neither forgets a firing nor sends it again.
import type { Logger } from "../log.ts";
import type { Metrics } from "../http/metrics.ts";
import type {
  AlertDelivery,
  AlertEvent,
  AlertReads,
  AlertState,
  AlertTransition,
  AlertSend,
} from "../store/contract/alerts.ts";
import type { StoreReads } from "../store/contract/executions.ts";
import type { RejectedReads } from "../store/contract/rejected.ts";
import type { GroupCommitWriter } from "../store/writer.ts";
import { HOUR } from "../domain/time.ts";
import { createStats } from "../read/stats.ts";
import { describeChannel, sendTo, type SendResult } from "./channels.ts";
import { decide } from "./decide.ts";
import { evaluateRule } from "./evaluate.ts";
import { testMessage, type AlertMessage } from "./message.ts";
import type { AlertsConfig, Channel } from "./rules.ts";

export interface AlertsDeps {
  config: AlertsConfig;
  store: StoreReads & AlertReads & Pick<RejectedReads, "rejectedCounts">;
  writer: GroupCommitWriter;
  clock: () => number;
  log: Logger;
  /** installstats_alert_deliveries_total{channel,result}. */
  deliveries: Metrics["alertDeliveries"];
  /** The dashboard's base URL for links (the public URL, or the listen address once known). */
  baseUrl: () => string;
}

/** Retries of a message back off from 30 s, doubling, to at most an hour between attempts... */
const FIRST_RETRY_MS = 30_000;
const MAX_RETRY_MS = HOUR;
/** ...and stop a day after it was queued: then it is marked failed (and counted). */
const GIVE_UP_MS = 24 * HOUR;
/** Messages handled per delivery round; the rest wait for the next. */
const ROUND_LIMIT = 200;

const retryDelay = (attempts: number): number =>
  Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1));

/** A job as maintenance/jobs.ts runs it (runtime.ts adds these to the scheduled jobs). */
interface AlertJob {
  name: string;
  everyMs: number;
  run(): Promise<Record<string, unknown>>;
  quiet(result: Record<string, unknown>): boolean;
}

export type Alerts = ReturnType<typeof createAlerts>;

/** The alerts of one process: their dependencies, and what it keeps between rounds. */
interface AlertsRun {
  deps: AlertsDeps;
  stats: ReturnType<typeof createStats>;
  channels: Map<string, Channel>;
  /** A channel that just failed is left alone until then (its messages wait in the queue). */
  pausedUntil: Map<string, number>;
  /** The delivery round in progress, if any (deliver). */
  delivering: Promise<Record<string, number>> | null;
}

async function evaluate(
  a: AlertsRun,
): Promise<{ rules: number; fired: number; resolved: number; sent_late: number; failed_rules: number }> {
  const { config, store, writer, clock, log } = a.deps;
  const now = clock();
  const [states, marks] = await Promise.all([store.alertStates(), store.alertRuleMarks()]);
  const silenceOf = new Map(marks.map((m) => [m.rule, m.silencedUntil]));
  const summaries: { rule: string; summary: string }[] = [];
  const transitions: AlertTransition[] = [];
  const sends: AlertSend[] = [];
  let failed = 0;
  for (const rule of config.rules) {
    const own = new Map(states.filter((s) => s.rule === rule.id).map((s) => [s.subject, s]));
    const firing = [...own.values()].filter((s) => s.status === "firing").map((s) => s.subject);
    try {
      const result = await evaluateRule(rule, { stats: a.stats, store }, now, firing);
      const d = decide(rule, result.observations, own, silenceOf.get(rule.id) ?? null, now, a.deps.baseUrl());
      transitions.push(...d.transitions);
      sends.push(...d.sends);
      summaries.push({ rule: rule.id, summary: result.summary });
    } catch (e) {
      failed++;
      const why = e instanceof Error ? e.message : String(e);
      log.error("alert rule could not be evaluated", { rule: rule.id, error: why });
      summaries.push({ rule: rule.id, summary: `not evaluated: ${why.slice(0, 200)}` });
    }
  }
  await writer.submit({ kind: "alert-round", at: now, rules: summaries, transitions, sends });
  for (const t of transitions) {
    const { title } = JSON.parse(t.message) as AlertMessage;
    log.info(t.status === "firing" ? "alert firing" : "alert resolved", {
      rule: t.rule,
      subject: t.subject,
      title,
      sent_to: t.channels,
      held_back: t.heldBack,
    });
  }
  for (const s of sends)
    log.info("alert sent after being held back", { rule: s.rule, subject: s.subject, sent_to: s.channels });
  return {
    rules: config.rules.length,
    fired: transitions.filter((t) => t.status === "firing").length,
    resolved: transitions.filter((t) => t.status === "resolved").length,
    sent_late: sends.length,
    failed_rules: failed,
  };
}

/** One attempt at one queued message, and what is written about it. */
async function attempt(
  a: AlertsRun,
  d: AlertDelivery,
  channel: Channel | undefined,
): Promise<"sent" | "retry" | "failed"> {
  const { writer, clock, log } = a.deps;
  const result: SendResult = channel
    ? await sendTo(channel, JSON.parse(d.message) as AlertMessage)
    : { ok: false, error: `channel ${d.channel} is no longer in the alerts file`, retryAfterMs: null };
  const at = clock();
  let outcome: "sent" | "retry" | "failed";
  let nextAt: number | null = null;
  if (result.ok) outcome = "sent";
  else if (!channel || at - d.createdAt >= GIVE_UP_MS) outcome = "failed";
  else {
    outcome = "retry";
    nextAt = at + Math.max(retryDelay(d.attempts + 1), result.retryAfterMs ?? 0);
    a.pausedUntil.set(d.channel, nextAt);
  }
  await writer.submit({
    kind: "alert-delivery",
    id: d.id,
    result: outcome,
    error: result.ok ? null : result.error,
    nextAt,
    at,
  });
  a.deps.deliveries.inc({ channel: d.channel, result: outcome });
  if (outcome === "sent") log.info("alert delivered", { channel: d.channel, delivery: d.id, attempts: d.attempts + 1 });
  else
    (outcome === "failed" ? log.error : log.warn)(
      outcome === "failed" ? "alert delivery given up" : "alert delivery failed; will retry",
      {
        channel: d.channel,
        delivery: d.id,
        attempts: d.attempts + 1,
        error: result.ok ? null : result.error,
        next_attempt: nextAt === null ? null : new Date(nextAt).toISOString(),
        queued_since: new Date(d.createdAt).toISOString(),
      },
    );
  return outcome;
}

/** Sends what is due, channel by channel (each in order, channels side by side); never twice at once in this process. */
function deliver(a: AlertsRun): Promise<Record<string, number>> {
  const { store, clock } = a.deps;
  a.delivering ??= (async () => {
    const now = clock();
    const due = await store.alertDue(now, ROUND_LIMIT);
    const byChannel = new Map<string, AlertDelivery[]>();
    for (const d of due) byChannel.set(d.channel, [...(byChannel.get(d.channel) ?? []), d]);
    const counts = { sent: 0, retry: 0, failed: 0, waiting: 0 };
    await Promise.all(
      [...byChannel].map(async ([name, list]) => {
        for (const d of list) {
          // After a failure, the channel's other messages wait for its retry (in order, without hammering a receiver that is down).
          if ((a.pausedUntil.get(name) ?? 0) > clock()) {
            counts.waiting++;
            continue;
          }
          counts[await attempt(a, d, a.channels.get(name))]++;
        }
      }),
    );
    return counts;
  })().finally(() => (a.delivering = null));
  return a.delivering;
}

async function forget({ deps }: AlertsRun): Promise<Record<string, unknown>> {
  const now = deps.clock();
  const r = await deps.writer.submit({ kind: "alert-forget", before: now - deps.config.historyMs, at: now });
  return { events: r.events, messages: r.messages };
}

const job = (
  name: string,
  everyMs: number,
  run: () => Promise<Record<string, unknown>>,
  idle: (r: Record<string, unknown>) => boolean,
): AlertJob => ({ name, everyMs, run, quiet: idle });

/** The scheduled jobs: evaluation, delivery, forgetting old history. */
const jobs = (a: AlertsRun): AlertJob[] => [
  job(
    "alert-evaluate",
    a.deps.config.evaluateEveryMs,
    () => evaluate(a),
    (r) => r.fired === 0 && r.resolved === 0 && r.sent_late === 0 && r.failed_rules === 0,
  ),
  job(
    "alert-deliver",
    5_000,
    () => deliver(a),
    (r) => r.sent === 0 && r.retry === 0 && r.failed === 0,
  ),
  job(
    "alert-forget",
    6 * HOUR,
    () => forget(a),
    (r) => r.events === 0 && r.messages === 0,
  ),
];

/** Sends a test message to one channel now, outside the queue; the answer says whether it arrived. */
async function testSend(
  a: AlertsRun,
  name: string,
): Promise<{ channel: string; type: Channel["type"]; target: string; ok: boolean; error: string | null }> {
  const channel = a.channels.get(name);
  if (!channel) throw new UnknownNameError("channel", name, [...a.channels.keys()]);
  const r = await sendTo(channel, testMessage(name, a.deps.clock(), a.deps.baseUrl()));
  a.deps.log.info("alert test sent", { channel: name, ok: r.ok, error: r.ok ? null : r.error });
  return {
    channel: name,
    type: channel.type,
    target: describeChannel(channel),
    ok: r.ok,
    error: r.ok ? null : r.error,
  };
}

/** Silences a rule until `until` (null: lifts it). */
async function silence({ deps }: AlertsRun, ruleId: string, until: number | null): Promise<void> {
  const { rules } = deps.config;
  if (!rules.some((r) => r.id === ruleId))
    throw new UnknownNameError(
      "rule",
      ruleId,
      rules.map((r) => r.id),
    );
  await deps.writer.submit({ kind: "alert-silence", rule: ruleId, until, at: deps.clock() });
}

/** Every rule of the file with where it stands: silence, last evaluation, what fires. */
async function listing({ deps }: AlertsRun) {
  const { store } = deps;
  const now = deps.clock();
  const [states, marks, recent] = await Promise.all([
    store.alertStates(),
    store.alertRuleMarks(),
    store.alertHistory({ limit: 500 }),
  ]);
  const titleOf = new Map(recent.map((e) => [e.id, (JSON.parse(e.message) as AlertMessage).title]));
  return deps.config.rules.map((rule) => {
    const mark = marks.find((m) => m.rule === rule.id);
    const own = states.filter((s) => s.rule === rule.id);
    const firing = own.filter((s) => s.status === "firing");
    const silencedUntil =
      mark?.silencedUntil !== null && mark?.silencedUntil !== undefined && mark.silencedUntil > now
        ? mark.silencedUntil
        : null;
    return {
      rule,
      status:
        mark?.evaluatedAt === null || mark?.evaluatedAt === undefined
          ? ("pending" as const)
          : firing.length > 0
            ? ("firing" as const)
            : ("ok" as const),
      silencedUntil,
      evaluatedAt: mark?.evaluatedAt ?? null,
      summary: mark?.summary ?? null,
      firing: firing.map((s: AlertState) => ({ ...s, title: titleOf.get(s.eventId) ?? null })),
    };
  });
}

export function createAlerts(deps: AlertsDeps) {
  const { config, store } = deps;
  const a: AlertsRun = {
    deps,
    stats: createStats(store),
    channels: new Map(config.channels.map((c) => [c.name, c])),
    pausedUntil: new Map(),
    delivering: null,
  };
  return {
    config,
    evaluate: () => evaluate(a),
    deliver: () => deliver(a),
    forget: () => forget(a),
    jobs: () => jobs(a),
    test: (name: string) => testSend(a, name),
    silence: (ruleId: string, until: number | null) => silence(a, ruleId, until),
    list: () => listing(a),
    history: (opts: { limit: number; before?: number; rule?: string }): Promise<AlertEvent[]> =>
      store.alertHistory(opts),
    channels: () => config.channels.map((c) => ({ name: c.name, type: c.type, target: describeChannel(c) })),
  };
}

/** A rule or channel the alerts file does not define (404 in the API, one line in the CLI). */
export class UnknownNameError extends Error {
  constructor(
    readonly what: "rule" | "channel",
    readonly unknown: string,
    known: readonly string[],
  ) {
    super(
      `no ${what} named ${JSON.stringify(unknown)} in the alerts file${known.length > 0 ? ` (${what}s: ${known.join(", ")})` : ` (it defines no ${what}s)`}`,
    );
  }
}

export type RuleListing = Awaited<ReturnType<Alerts["list"]>>[number];
