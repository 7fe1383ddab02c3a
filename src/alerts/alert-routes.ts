// Alerts over HTTP. Reading them (rules with their state, the history) needs what every read
// needs (the read token when one is set): they hold the same facts as the stats, and no secret
// (channels show their kind and host only). Acting (a test send, a silence) needs the admin
// token: those paths are under /api/admin/ (src/http/access.ts).
import { Elysia, t, type Static } from "elysia";
import { parseDuration } from "../config.ts";
import { ErrorBody, errorBody } from "../http/errors.ts";
import { literalUnion } from "../http/schemas.ts";
import { QueryError, docParam, intParam, strictQuery, textParam } from "../read/query.ts";
import { UnknownNameError, type Alerts, type RuleListing } from "./service.ts";
import type { AlertMessage } from "./message.ts";
import { CHANNEL_TYPES, RULE_TYPES, describeRule, type Rule } from "./rules.ts";
import type { AlertEvent } from "../store/contract/alerts.ts";

const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());
const labelsOf = (subject: string): Record<string, string> =>
  subject === ""
    ? {}
    : Object.fromEntries(subject.split("|").map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]));

const Param = t.Union([t.String(), t.Number(), t.Boolean(), t.Null(), t.Array(t.String())]);
const Labels = t.Record(t.String(), t.String(), {
  description: "what the alert is about: app, signature, exit_code; empty for the rule as a whole",
});

const RuleJson = t.Object({
  id: t.String(),
  type: literalUnion(RULE_TYPES, { description: "failure_rate, new_error, no_reports, rejected" }),
  description: t.String({ description: "the rule in one sentence" }),
  params: t.Record(t.String(), Param, { description: "the rule's settings as in the file (durations in seconds)" }),
  send_to: t.Array(t.String()),
  cooldown_s: t.Integer(),
  send_resolved: t.Boolean(),
  status: t.Union([t.Literal("pending"), t.Literal("ok"), t.Literal("firing")], {
    description: "pending: not evaluated yet",
  }),
  silenced_until: t.Nullable(t.String({ format: "date-time" })),
  evaluated_at: t.Nullable(t.String({ format: "date-time" })),
  summary: t.Nullable(t.String({ description: "what the last evaluation found, in a few words" })),
  firing: t.Array(
    t.Object({
      subject: t.String(),
      labels: Labels,
      since: t.String({ format: "date-time" }),
      notified: t.Boolean({ description: "false while held back by a cooldown or a silence" }),
      title: t.Nullable(t.String()),
    }),
  ),
});

const EventJson = t.Object({
  id: t.Integer(),
  rule: t.String(),
  subject: t.String(),
  labels: Labels,
  status: t.Union([t.Literal("firing"), t.Literal("resolved")]),
  at: t.String({ format: "date-time" }),
  title: t.String(),
  text: t.String(),
  link: t.String(),
  values: t.Record(t.String(), t.Unknown(), {
    description: "the numbers: rate, failed, runs, threshold, baseline, count, ...",
  }),
  notified_at: t.Nullable(
    t.String({ format: "date-time", description: "when its message was queued; null when it was not sent" }),
  ),
  held_back: t.Nullable(
    t.Union([t.Literal("cooldown"), t.Literal("silenced"), t.Literal("unsent")], {
      description: "why it was not sent when it happened",
    }),
  ),
  deliveries: t.Array(
    t.Object({
      channel: t.String(),
      state: t.Union([t.Literal("pending"), t.Literal("sent"), t.Literal("failed")]),
      attempts: t.Integer(),
      last_error: t.Nullable(t.String()),
      sent_at: t.Nullable(t.String({ format: "date-time" })),
    }),
  ),
});
export type AlertEventJson = Static<typeof EventJson>;

const ChannelJson = t.Object({
  name: t.String(),
  type: literalUnion(CHANNEL_TYPES, { description: "webhook, ntfy, gotify, discord, slack, email" }),
  target: t.String({ description: "where it sends, secrets masked" }),
});

const AlertsJson = t.Object({
  enabled: t.Boolean({ description: "false when the server runs without an alerts file (--alerts)" }),
  evaluate_every_s: t.Nullable(t.Integer()),
  channels: t.Array(ChannelJson),
  rules: t.Array(RuleJson),
});
export type AlertsJson = Static<typeof AlertsJson>;

const TestJson = t.Object({
  channel: t.String(),
  type: t.String(),
  target: t.String(),
  ok: t.Boolean(),
  error: t.Nullable(t.String({ description: "why it did not arrive (secrets masked)" })),
});
const SilenceJson = t.Object({ rule: t.String(), silenced_until: t.Nullable(t.String({ format: "date-time" })) });

const seconds = (ms: number): number => Math.round(ms / 1000);

/** The rule's own settings, in the file's words. */
function paramsOf(rule: Rule): Record<string, string | number | boolean | null | string[]> {
  const scope = (s: { app: string } | { each: true } | { all: true }) =>
    "app" in s ? s.app : "each" in s ? "*" : null;
  switch (rule.type) {
    case "failure_rate":
      return {
        app: scope(rule.scope),
        kind: rule.kind,
        repo_source: rule.repoSource,
        window_s: seconds(rule.windowMs),
        min_runs: rule.minRuns,
        above: rule.above,
        baseline_windows: rule.baseline?.windows ?? null,
        factor: rule.baseline?.factor ?? null,
        min_increase: rule.baseline?.minIncrease ?? null,
      };
    case "new_error":
      return {
        app: scope(rule.scope),
        kind: rule.kind,
        repo_source: rule.repoSource,
        on: rule.on,
        window_s: seconds(rule.windowMs),
        lookback_s: seconds(rule.lookbackMs),
        min_failures: rule.minFailures,
      };
    case "no_reports":
      return { for_s: seconds(rule.forMs) };
    case "rejected":
      return { reasons: rule.reasons, window_s: seconds(rule.windowMs), above: rule.above, min_count: rule.minCount };
  }
}

const ruleJson = (r: RuleListing): Static<typeof RuleJson> => ({
  id: r.rule.id,
  type: r.rule.type,
  description: describeRule(r.rule),
  params: paramsOf(r.rule),
  send_to: r.rule.sendTo,
  cooldown_s: seconds(r.rule.cooldownMs),
  send_resolved: r.rule.sendResolved,
  status: r.status,
  silenced_until: iso(r.silencedUntil),
  evaluated_at: iso(r.evaluatedAt),
  summary: r.summary,
  firing: r.firing.map((f) => ({
    subject: f.subject,
    labels: labelsOf(f.subject),
    since: iso(f.since)!,
    notified: f.notified,
    title: f.title,
  })),
});

export function eventJson(e: AlertEvent): AlertEventJson {
  const m = JSON.parse(e.message) as AlertMessage;
  return {
    id: e.id,
    rule: e.rule,
    subject: e.subject,
    labels: labelsOf(e.subject),
    status: e.status,
    at: iso(e.at)!,
    title: m.title,
    text: m.text,
    link: m.link,
    values: m.values as Record<string, unknown>,
    notified_at: iso(e.notifiedAt),
    held_back: e.heldBack,
    deliveries: e.deliveries.map((d) => ({
      channel: d.channel,
      state: d.state,
      attempts: d.attempts,
      last_error: d.lastError,
      sent_at: iso(d.sentAt),
    })),
  };
}

/** The listing of GET /api/alerts (also `installstats alerts list`). */
export async function alertsJson(alerts: Alerts | null): Promise<AlertsJson> {
  if (!alerts) return { enabled: false, evaluate_every_s: null, channels: [], rules: [] };
  return {
    enabled: true,
    evaluate_every_s: seconds(alerts.config.evaluateEveryMs),
    channels: alerts.channels(),
    rules: (await alerts.list()).map(ruleJson),
  };
}

const OFF = "alerts are off on this server: start it with --alerts <file> (or INSTALLSTATS_ALERTS)";
const tags = ["alerts"];
const security = [{ bearer: [] }];

/** Runs an action on a rule or channel; one the file does not name comes back as a 404 body naming those it does. */
async function named<T>(fn: () => Promise<T>): Promise<{ value: T } | { missing: ErrorBody }> {
  try {
    return { value: await fn() };
  } catch (e) {
    if (e instanceof UnknownNameError) return { missing: errorBody("not_found", e.message, e.what) };
    throw e;
  }
}

const ListRoute = {
  response: { 200: AlertsJson },
  detail: {
    tags,
    summary: "Alert rules with their state, and the channels (secrets masked)",
    description:
      "Every rule of the alerts file: ok, firing (and what about), pending (not evaluated yet); its silence and last evaluation.",
  },
};

const HistoryQuery = t.Object({
  limit: docParam("entries per page: a whole number from 1 to 500 (default 50)"),
  before: docParam("continue below this entry id (next_before of the previous page)"),
  rule: docParam("only this rule's entries"),
});
const HistoryRoute = {
  ...strictQuery(HistoryQuery),
  response: {
    200: t.Object({ events: t.Array(EventJson), next_before: t.Nullable(t.Integer()) }),
    400: ErrorBody,
  },
  detail: {
    tags,
    summary: "Alert history, newest first: what fired, when, when it resolved, and where its messages went",
  },
};

async function history(alerts: Alerts | null, query: Static<typeof HistoryQuery>) {
  const limit = intParam("limit", query.limit, 1, 500) ?? 50;
  const before = intParam("before", query.before, 1, Number.MAX_SAFE_INTEGER);
  const rule = textParam("rule", query.rule, 64);
  const events = alerts ? await alerts.history({ limit, before, rule }) : [];
  return { events: events.map(eventJson), next_before: events.length === limit ? events.at(-1)!.id : null };
}

const TestRoute = {
  params: t.Object({ channel: t.String({ minLength: 1, maxLength: 64 }) }),
  response: { 200: TestJson, 404: ErrorBody },
  detail: {
    tags,
    security,
    summary: "Send a test message to one channel now",
    description:
      "Outside the queue and not retried: the answer says whether the receiver took it (ok), or why not (error).",
  },
};

const SilenceQuery = t.Object({
  for: t.Optional(t.String({ description: "how long, e.g. 2h, 3d" })),
  until: t.Optional(t.String({ description: "until when (ISO 8601)" })),
});
const SilenceRoute = {
  ...strictQuery(SilenceQuery),
  params: t.Object({ rule: t.String({ minLength: 1, maxLength: 64 }) }),
  response: { 200: SilenceJson, 400: ErrorBody, 404: ErrorBody },
  detail: {
    tags,
    security,
    summary: "Silence a rule for a while: it is still evaluated and recorded, nothing is sent",
    description: "A firing that begins meanwhile is sent when the silence ends if it still fires.",
  },
};

/** When a silence asked for ends: `for` a duration from now, or `until` a time to come, exactly one of them. */
function silenceEnd(query: Static<typeof SilenceQuery>, now: number): number {
  if ((query.for === undefined) === (query.until === undefined))
    throw new QueryError("for", "give for (a duration such as 2h or 3d) or until (an ISO date-time), one of them");
  if (query.for !== undefined) {
    const ms = parseDuration(query.for);
    if (!Number.isFinite(ms) || ms <= 0)
      throw new QueryError(
        "for",
        `for must be a duration such as 30m, 2h or 3d, got ${JSON.stringify(query.for.slice(0, 40))}`,
      );
    return now + ms;
  }
  const until = Date.parse(query.until!);
  if (!Number.isFinite(until) || until <= now)
    throw new QueryError("until", "until must be a date-time in the future, e.g. 2026-12-01T08:00:00Z");
  return until;
}

const UnsilenceRoute = {
  params: t.Object({ rule: t.String({ minLength: 1, maxLength: 64 }) }),
  response: { 200: SilenceJson, 404: ErrorBody },
  detail: { tags, security, summary: "End a rule's silence now" },
};

export function alertRoutes(deps: { alerts: Alerts | null; clock: () => number }) {
  const { alerts, clock } = deps;
  return new Elysia({ name: "alerts" })
    .get("/api/alerts", () => alertsJson(alerts), ListRoute)
    .get("/api/alerts/history", ({ query }) => history(alerts, query), HistoryRoute)
    .post(
      "/api/admin/alerts/test/:channel",
      async ({ params, status }) => {
        if (!alerts) return status(404, errorBody("not_found", OFF));
        const r = await named(() => alerts.test(params.channel));
        return "missing" in r ? status(404, r.missing) : status(200, r.value);
      },
      TestRoute,
    )
    .post(
      "/api/admin/alerts/silence/:rule",
      async ({ params, query, status }) => {
        if (!alerts) return status(404, errorBody("not_found", OFF));
        const until = silenceEnd(query, clock());
        const r = await named(() => alerts.silence(params.rule, until));
        return "missing" in r ? status(404, r.missing) : status(200, { rule: params.rule, silenced_until: iso(until) });
      },
      SilenceRoute,
    )
    .delete(
      "/api/admin/alerts/silence/:rule",
      async ({ params, status }) => {
        if (!alerts) return status(404, errorBody("not_found", OFF));
        const r = await named(() => alerts.silence(params.rule, null));
        return "missing" in r ? status(404, r.missing) : status(200, { rule: params.rule, silenced_until: null });
      },
      UnsilenceRoute,
    );
}
