// installstats alerts list|history|test <channel>|silence <rule> --for 2h|unsilence <rule>|check [file]
// Works on the database and the alerts file directly, with or without a server running.
import { parseDuration } from "../config.ts";
import { createLogger } from "../log.ts";
import { createMetrics } from "../http/metrics.ts";
import { createAlerts, UnknownNameError, type Alerts } from "../alerts/service.ts";
import { alertsJson, eventJson } from "../alerts/alert-routes.ts";
import { describeRule, loadAlerts } from "../alerts/rules.ts";
import { createWriter } from "../store/writer.ts";
import { closest } from "./args.ts";
import { UsageError, countFlag, openDatabaseOf, type Command, type CommandContext } from "./command.ts";
import { CliError, EXIT } from "./errors.ts";

const ACTIONS = ["list", "history", "test", "silence", "unsilence", "check"] as const;
type Action = (typeof ACTIONS)[number];

const USAGE =
  "installstats alerts list | history | test <channel> | silence <rule> --for 2h | unsilence <rule> | check [file]";

/** The file named by --alerts (or INSTALLSTATS_ALERTS), required for every action but history. */
function alertsFile(ctx: CommandContext, action: Action): string {
  if (ctx.config.alerts === null)
    throw new UsageError(`alerts ${action} needs the alerts file: --alerts <file> (or INSTALLSTATS_ALERTS)`);
  return ctx.config.alerts;
}

/** Runs `fn` with the alerts of the file over the database (opened, never created). */
async function withAlerts<T>(ctx: CommandContext, action: Action, fn: (alerts: Alerts) => Promise<T>): Promise<T> {
  const config = await loadAlerts(alertsFile(ctx, action), process.env);
  const engine = await openDatabaseOf(ctx, { create: false });
  const { store } = engine;
  try {
    const writer = createWriter((ops) => store.write(ops), ctx.config.maxBatch);
    const log = createLogger("error", (line) => ctx.err(line), Date.now);
    // Links of a test message sent from here: the public URL, else where a default server would listen.
    const baseUrl = ctx.config.publicUrl ?? `http://localhost:${ctx.config.port}`;
    return await fn(
      createAlerts({
        config,
        store,
        writer,
        clock: Date.now,
        log,
        deliveries: createMetrics().alertDeliveries,
        baseUrl: () => baseUrl,
      }),
    );
  } catch (e) {
    throw e instanceof UnknownNameError ? new UsageError(e.message) : e;
  } finally {
    await engine.close();
  }
}

const iso = (t: number | null): string =>
  t === null ? "-" : `${new Date(t).toISOString().slice(0, 16).replace("T", " ")} UTC`;

export const alertsCommand: Command = {
  name: "alerts",
  summary:
    "alert rules and channels: list, history, test <channel>, silence <rule> --for 2h, unsilence <rule>, check [file]",
  args: "<list|history|test|silence|unsilence|check> [name]",
  settings: ["db", "alerts", "publicUrl"],
  flags: {
    for: { type: "string", help: "silence: how long, e.g. 30m, 2h, 3d" },
    until: { type: "string", help: "silence: until when, an ISO date-time (e.g. 2026-12-01T08:00:00Z)" },
    limit: { type: "string", help: "history: most entries (default 50)" },
    rule: { type: "string", help: "history: only this rule's entries" },
    json: { type: "boolean", help: "list: the API's JSON (GET /api/alerts) instead of lines" },
  },
  async run(ctx) {
    const [word, name, ...extra] = ctx.positionals;
    if (word === undefined) throw new UsageError(`alerts needs an action: ${USAGE}`);
    if (!(ACTIONS as readonly string[]).includes(word)) {
      const guess = closest(word, ACTIONS);
      throw new UsageError(`unknown alerts action "${word}"${guess ? `; did you mean ${guess}?` : ""} (${USAGE})`);
    }
    const action = word as Action;
    const needsName = action === "test" || action === "silence" || action === "unsilence";
    if (needsName && name === undefined)
      throw new UsageError(
        `alerts ${action} needs the ${action === "test" ? "channel" : "rule"}'s name, e.g. installstats alerts ${action} ${action === "test" ? "ops-ntfy" : "failure-spike"}${action === "silence" ? " --for 2h" : ""}`,
      );
    if (extra.length > 0 || (!needsName && action !== "check" && name !== undefined))
      throw new UsageError(`too many arguments; ${USAGE}`);

    switch (action) {
      case "check":
        return check(ctx, name ?? alertsFile(ctx, action));
      case "list":
        return withAlerts(ctx, action, (alerts) => list(ctx, alerts));
      case "history":
        return history(ctx);
      case "test":
        return withAlerts(ctx, action, async (alerts) => {
          const r = await alerts.test(name!);
          ctx.out(`${JSON.stringify(r)}\n`);
          if (!r.ok)
            throw new CliError(
              `test message to channel ${r.channel} (${r.target}) did not arrive: ${r.error}`,
              EXIT.failed,
            );
          return 0;
        });
      case "silence": {
        const until = silenceEnd(ctx);
        return withAlerts(ctx, action, async (alerts) => {
          await alerts.silence(name!, until);
          ctx.out(`${JSON.stringify({ rule: name, silenced_until: new Date(until).toISOString() })}\n`);
          return 0;
        });
      }
      case "unsilence":
        return withAlerts(ctx, action, async (alerts) => {
          await alerts.silence(name!, null);
          ctx.out(`${JSON.stringify({ rule: name, silenced_until: null })}\n`);
          return 0;
        });
    }
  },
};

/** The alerts file read and checked, and what it holds. */
async function check(ctx: CommandContext, file: string): Promise<number> {
  const config = await loadAlerts(file, process.env);
  ctx.out(
    `${file}: ok, ${config.rules.length} rules, ${config.channels.length} channels, evaluated every ${config.evaluateEveryMs / 1000} s\n`,
  );
  for (const c of config.channels) ctx.out(`  channel ${c.name} (${c.type})\n`);
  for (const r of config.rules)
    ctx.out(
      `  rule ${r.id}: ${describeRule(r)}; to ${r.sendTo.length > 0 ? r.sendTo.join(", ") : "the dashboard only"}\n`,
    );
  return 0;
}

/** The rules with their state, a line each (or the API's JSON with --json). */
async function list(ctx: CommandContext, alerts: Alerts): Promise<number> {
  const json = await alertsJson(alerts);
  if (ctx.flags.json === true) {
    ctx.out(`${JSON.stringify(json)}\n`);
    return 0;
  }
  for (const r of json.rules) {
    const silenced = r.silenced_until ? ` (silenced until ${iso(Date.parse(r.silenced_until))})` : "";
    ctx.out(`${r.id}  ${r.status.toUpperCase()}${silenced}  ${r.description}\n`);
    if (r.summary)
      ctx.out(`    last evaluated ${iso(r.evaluated_at ? Date.parse(r.evaluated_at) : null)}: ${r.summary}\n`);
    for (const f of r.firing)
      ctx.out(
        `    firing since ${iso(Date.parse(f.since))}${f.notified ? "" : " (not sent yet)"}: ${f.title ?? f.subject}\n`,
      );
  }
  return 0;
}

async function history(ctx: CommandContext): Promise<number> {
  const limit = countFlag(ctx, "limit", 50);
  const rule = typeof ctx.flags.rule === "string" ? ctx.flags.rule : undefined;
  const engine = await openDatabaseOf(ctx, { create: false });
  try {
    for (const e of await engine.store.alertHistory({ limit, rule })) ctx.out(`${JSON.stringify(eventJson(e))}\n`);
  } finally {
    await engine.close();
  }
  return 0;
}

/** When a silence ends: --for a duration from now, or --until a time to come, exactly one of them. */
function silenceEnd(ctx: CommandContext): number {
  const forText = ctx.flags.for;
  const untilText = ctx.flags.until;
  if ((typeof forText === "string") === (typeof untilText === "string"))
    throw new UsageError("alerts silence takes --for <duration> (e.g. --for 2h) or --until <date-time>, one of them");
  const now = Date.now();
  const until = typeof forText === "string" ? now + parseDuration(forText) : Date.parse(untilText as string);
  if (!Number.isFinite(until) || until <= now) {
    throw new UsageError(
      typeof forText === "string"
        ? `--for must be a duration such as 30m, 2h or 3d, got ${JSON.stringify(forText)}`
        : `--until must be a date-time in the future, e.g. 2026-12-01T08:00:00Z`,
    );
  }
  return until;
}
