// The alerts file: rules and channels in TOML, edited by the admin (docs/decisions/2026-11-26-alerts.md).
// Parsed and checked once at start-up (and by `installstats alerts check`): every mistake is one
// line naming the file, the line and the rule or channel, and what is wrong.
import { ConfigError, parseDuration } from "../config.ts";
import { KINDS, type Kind } from "../domain/execution.ts";
import { REJECT_REASONS, type RejectReason } from "../domain/rejection.ts";
import { HOUR } from "../domain/time.ts";

export const CHANNEL_TYPES = ["webhook", "ntfy", "gotify", "discord", "slack", "email"] as const;
export const RULE_TYPES = ["failure_rate", "new_error", "no_reports", "rejected"] as const;

interface ChannelBase {
  name: string;
  /** Longest one attempt may take. */
  timeoutMs: number;
}
export type Channel = ChannelBase &
  (
    | { type: "webhook"; url: string; headers: Record<string, string> }
    | {
        type: "ntfy";
        url: string;
        token: string | null;
        username: string | null;
        password: string | null;
        priority: number | null;
        tags: string[];
      }
    | { type: "gotify"; url: string; token: string; priority: number | null }
    | { type: "discord"; url: string; username: string | null }
    | { type: "slack"; url: string; username: string | null }
    | {
        type: "email";
        host: string;
        port: number;
        security: "starttls" | "tls" | "none";
        username: string | null;
        password: string | null;
        from: string;
        to: string[];
        /** PEM file of a CA to trust besides the system's (a self-signed server). */
        caFile: string | null;
        /** False: accept any certificate (never on the internet). */
        tlsVerify: boolean;
      }
  );

/** Which apps a rule looks at: one, every app on its own ("*"), or all of them together. */
type AppScope = { app: string } | { each: true } | { all: true };

interface RuleBase {
  id: string;
  sendTo: string[];
  cooldownMs: number;
  sendResolved: boolean;
}
export type Rule = RuleBase &
  (
    | {
        type: "failure_rate";
        scope: AppScope;
        /** "all": every kind; else one (installs by default, as the dashboard counts). */
        kind: Kind | "all";
        repoSource: string | null;
        windowMs: number;
        minRuns: number;
        above: number | null;
        baseline: { windows: number; factor: number; minIncrease: number } | null;
      }
    | {
        type: "new_error";
        scope: AppScope;
        kind: Kind | "all";
        repoSource: string | null;
        on: "signature" | "exit_code";
        windowMs: number;
        lookbackMs: number;
        minFailures: number;
      }
    | { type: "no_reports"; forMs: number }
    | { type: "rejected"; reasons: RejectReason[]; windowMs: number; above: number; minCount: number }
  );

export interface AlertsConfig {
  /** The file, as given (for messages). */
  file: string;
  evaluateEveryMs: number;
  /** History entries and finished messages older than this are forgotten. */
  historyMs: number;
  channels: Channel[];
  rules: Rule[];
}

const DEFAULTS = { evaluateEveryMs: 60_000, cooldownMs: HOUR, historyMs: 90 * 24 * HOUR, timeoutMs: 10_000 };
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

type Table = Record<string, unknown>;
const isTable = (v: unknown): v is Table => typeof v === "object" && v !== null && !Array.isArray(v);

/** Where each table and key of the file is, for messages: TOML parsers give values, not lines. */
function locate(text: string): { table(path: string): number | null; key(path: string, key: string): number | null } {
  const tables = new Map<string, number>();
  const keys = new Map<string, number>();
  let current = "";
  const rules = { n: 0 };
  const unquote = (s: string) =>
    s
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .replace(/^'(.*)'$/, "$1");
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    const array = /^\[\[\s*([^\]]+?)\s*\]\]/.exec(line);
    const table = /^\[\s*([^\]]+?)\s*\]/.exec(line);
    if (array) {
      current = unquote(array[1]!) === "rule" ? `rule.${rules.n++}` : unquote(array[1]!);
      tables.set(current, i + 1);
    } else if (table) {
      current = table[1]!.split(".").map(unquote).join(".");
      tables.set(current, i + 1);
    } else {
      const key = /^("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*=/.exec(line);
      if (key && !keys.has(`${current}|${unquote(key[1]!)}`)) keys.set(`${current}|${unquote(key[1]!)}`, i + 1);
    }
  });
  return {
    table: (path) => tables.get(path) ?? null,
    key: (path, key) => keys.get(`${path}|${key}`) ?? keys.get(`|${key}`) ?? tables.get(path) ?? null,
  };
}

/**
 * Reads one table (the top level, a channel, a rule) key by key; `fail` names the file, the line
 * of the key (or of the table) and what the table is.
 */
class Reader {
  private used = new Set<string>();
  constructor(
    private readonly table: Table,
    private readonly where: (key: string | null) => string,
    readonly env: Record<string, string | undefined>,
    /** Values may name environment variables, ${NAME} (secrets kept out of the file). */
    private readonly interpolate: boolean,
  ) {}

  fail(key: string | null, what: string): never {
    throw new ConfigError(`${this.where(key)}: ${what}`);
  }
  private raw(key: string): unknown {
    this.used.add(key);
    return this.table[key];
  }
  /** Keys read elsewhere (the top level's channel and rule tables). */
  readElsewhere(...keys: string[]): void {
    for (const k of keys) this.used.add(k);
  }
  string(key: string): string | null {
    const v = this.raw(key);
    if (v === undefined) return null;
    if (typeof v !== "string") this.fail(key, `${key} must be a string, e.g. ${key} = "..."`);
    return this.interpolate ? this.expand(key, v) : v;
  }
  required(key: string, example: string): string {
    const v = this.string(key);
    if (v === null || v.trim() === "") this.fail(key, `${key} is required, e.g. ${key} = ${example}`);
    return v;
  }
  private expand(key: string, v: string): string {
    return v.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const value = this.env[name];
      if (value === undefined || value === "")
        this.fail(key, `${key} names the environment variable ${name}, which is not set`);
      return value;
    });
  }
  number(key: string, check: { min: number; max: number; integer?: boolean }, fallback: number): number;
  number(key: string, check: { min: number; max: number; integer?: boolean }, fallback: null): number | null;
  number(key: string, check: { min: number; max: number; integer?: boolean }, fallback: number | null): number | null {
    const v = this.raw(key);
    if (v === undefined) return fallback;
    const n = typeof v === "bigint" ? Number(v) : v;
    if (
      typeof n !== "number" ||
      !Number.isFinite(n) ||
      n < check.min ||
      n > check.max ||
      (check.integer && !Number.isInteger(n))
    ) {
      this.fail(
        key,
        `${key} must be a ${check.integer ? "whole " : ""}number from ${check.min} to ${check.max}, got ${JSON.stringify(typeof v === "bigint" ? Number(v) : v)}`,
      );
    }
    return n;
  }
  boolean(key: string, fallback: boolean): boolean {
    const v = this.raw(key);
    if (v === undefined) return fallback;
    if (typeof v !== "boolean") this.fail(key, `${key} must be true or false`);
    return v;
  }
  duration(key: string, fallback: number | null, check: { minMs: number; wholeHours?: boolean }): number {
    const v = this.raw(key);
    if (v === undefined) {
      if (fallback === null) this.fail(key, `${key} is required, e.g. ${key} = "${check.wholeHours ? "6h" : "30m"}"`);
      return fallback;
    }
    const ms = typeof v === "string" ? parseDuration(v) : Number.NaN;
    const example = check.wholeHours ? "6h, 24h or 7d (whole hours: rules read hourly rollups)" : "90s, 30m, 6h or 7d";
    if (!Number.isFinite(ms) || ms < check.minMs || (check.wholeHours && ms % HOUR !== 0))
      this.fail(key, `${key} must be a duration such as ${example}, got ${JSON.stringify(v)}`);
    return ms;
  }
  strings(key: string): string[] | null {
    const v = this.raw(key);
    if (v === undefined) return null;
    const list = typeof v === "string" ? [v] : v;
    if (!Array.isArray(list) || !list.every((s) => typeof s === "string"))
      this.fail(key, `${key} must be a list of strings, e.g. ${key} = ["a", "b"]`);
    return list.map((s: string) => (this.interpolate ? this.expand(key, s) : s));
  }
  oneOf<T extends string>(key: string, values: readonly T[], fallback: T | null): T {
    const v = this.raw(key);
    if (v === undefined && fallback !== null) return fallback;
    if (typeof v !== "string" || !values.includes(v as T))
      this.fail(
        key,
        `${key} must be one of ${values.join(", ")}${v === undefined ? "" : `, got ${JSON.stringify(v)}`}`,
      );
    return v as T;
  }
  stringTable(key: string): Record<string, string> {
    const v = this.raw(key);
    if (v === undefined) return {};
    if (!isTable(v) || !Object.values(v).every((s) => typeof s === "string"))
      this.fail(key, `${key} must be a table of strings, e.g. ${key} = { Authorization = "Bearer \${TOKEN}" }`);
    return Object.fromEntries(
      Object.entries(v as Record<string, string>).map(([k, s]) => [k, this.interpolate ? this.expand(key, s) : s]),
    );
  }
  /** Every key was read: anything else is a typo, named with the keys the table takes. */
  done(kindOf: string): void {
    const unknown = Object.keys(this.table).filter((k) => !this.used.has(k));
    if (unknown.length > 0)
      this.fail(unknown[0]!, `unknown key ${unknown[0]} in ${kindOf}; it takes ${[...this.used].sort().join(", ")}`);
  }
}

function httpUrl(r: Reader, key = "url"): string {
  const url = r.required(key, `"https://..."`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // The value may hold a token: it is not repeated.
    return r.fail(key, `${key} is not a URL (http:// or https://)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    r.fail(key, `${key} must start with http:// or https://`);
  return url;
}

const EMAIL = /^[^\s@<>]+@[^\s@<>]+$/;
/** "Name <a@b>" or "a@b". */
const mailbox = (s: string): boolean => EMAIL.test(s) || /^[^<>]*<[^\s@<>]+@[^\s@<>]+>$/.test(s.trim());

function channelOf(name: string, r: Reader): Channel {
  if (!NAME.test(name))
    r.fail(null, `channel name ${JSON.stringify(name)} must be letters, digits, "-", "_" or "." (at most 64)`);
  const type = r.oneOf("type", CHANNEL_TYPES, null);
  const base = { name, timeoutMs: r.duration("timeout", DEFAULTS.timeoutMs, { minMs: 1000 }) };
  let channel: Channel;
  switch (type) {
    case "webhook":
      channel = { ...base, type, url: httpUrl(r), headers: r.stringTable("headers") };
      break;
    case "ntfy": {
      const token = r.string("token");
      const username = r.string("username");
      const password = r.string("password");
      if ((username === null) !== (password === null))
        r.fail(username === null ? "password" : "username", "username and password go together (or use token)");
      channel = {
        ...base,
        type,
        url: httpUrl(r),
        token,
        username,
        password,
        priority: r.number("priority", { min: 1, max: 5, integer: true }, null),
        tags: r.strings("tags") ?? [],
      };
      break;
    }
    case "gotify":
      channel = {
        ...base,
        type,
        url: httpUrl(r),
        token: r.required("token", `"\${GOTIFY_TOKEN}" (an application token)`),
        priority: r.number("priority", { min: 0, max: 10, integer: true }, null),
      };
      break;
    case "discord":
    case "slack":
      channel = { ...base, type, url: httpUrl(r), username: r.string("username") };
      break;
    case "email": {
      const security = r.oneOf("security", ["starttls", "tls", "none"] as const, "starttls");
      const username = r.string("username");
      const password = r.string("password");
      if ((username === null) !== (password === null))
        r.fail(username === null ? "password" : "username", "username and password go together");
      if (username !== null && security === "none")
        r.fail(
          "username",
          `security = "none" would send the password unencrypted; use security = "starttls" (port 587) or "tls" (port 465)`,
        );
      const from = r.required("from", `"installstats <alerts@example.org>"`);
      if (!mailbox(from)) r.fail("from", `from must be an address, e.g. "installstats <alerts@example.org>"`);
      const to = r.strings("to");
      if (to === null || to.length === 0) r.fail("to", `to is required, e.g. to = ["ops@example.org"]`);
      const bad = to.find((a) => !EMAIL.test(a));
      if (bad !== undefined) r.fail("to", `to holds ${JSON.stringify(bad)}, which is not an address`);
      channel = {
        ...base,
        type,
        host: r.required("host", `"smtp.example.org"`),
        port: r.number(
          "port",
          { min: 1, max: 65535, integer: true },
          security === "tls" ? 465 : security === "starttls" ? 587 : 25,
        ),
        security,
        username,
        password,
        from,
        to,
        caFile: r.string("ca_file"),
        tlsVerify: r.boolean("tls_verify", true),
      };
      break;
    }
  }
  r.done(`a ${type} channel`);
  return channel;
}

function scopeOf(r: Reader): AppScope {
  const app = r.string("app");
  if (app === null) return { all: true };
  if (app === "*") return { each: true };
  if (app.trim() === "")
    r.fail("app", `app must name an app, or be "*" for each app on its own (leave it out for all apps together)`);
  return { app };
}

const kindOf = (r: Reader): Kind | "all" => r.oneOf("kind", [...KINDS, "all"] as const, "install");

function ruleOf(
  r: Reader,
  defaults: { sendTo: string[] | null; cooldownMs: number },
  channels: ReadonlySet<string>,
): Rule {
  const id = r.required("id", `"failure-spike"`);
  if (!NAME.test(id)) r.fail("id", `id ${JSON.stringify(id)} must be letters, digits, "-", "_" or "." (at most 64)`);
  const type = r.oneOf("type", RULE_TYPES, null);
  const sendTo = r.strings("send_to") ?? defaults.sendTo;
  if (sendTo === null)
    r.fail(
      "send_to",
      `rule ${id} names no channel: add send_to = ["<channel>"], or send_to = [] to keep it to the dashboard`,
    );
  const unknown = sendTo.find((c) => !channels.has(c));
  if (unknown !== undefined)
    r.fail(
      "send_to",
      `send_to names channel ${JSON.stringify(unknown)}, which is not defined${channels.size > 0 ? ` (channels: ${[...channels].join(", ")})` : ": add a [channel.<name>] table"}`,
    );
  const base: RuleBase = {
    id,
    sendTo,
    cooldownMs: r.duration("cooldown", defaults.cooldownMs, { minMs: 0 }),
    sendResolved: r.boolean("send_resolved", true),
  };
  let rule: Rule;
  switch (type) {
    case "failure_rate": {
      const above = r.number("above", { min: 0, max: 1 }, null);
      const windows = r.number("baseline_windows", { min: 1, max: 1000, integer: true }, null);
      const factor = r.number("factor", { min: 1, max: 1000 }, null);
      const minIncrease = r.number("min_increase", { min: 0, max: 1 }, 0.05);
      if ((windows === null) !== (factor === null))
        r.fail(
          windows === null ? "factor" : "baseline_windows",
          "baseline_windows and factor go together: the rate is compared with the previous baseline_windows windows",
        );
      if (above === null && factor === null)
        r.fail(
          null,
          `rule ${id} has no threshold: add above = 0.2 (a failure rate of 20%), or baseline_windows = 7 with factor = 2 (twice its own rate before)`,
        );
      rule = {
        ...base,
        type,
        scope: scopeOf(r),
        kind: kindOf(r),
        repoSource: r.string("repo_source"),
        windowMs: r.duration("window", null, { minMs: HOUR, wholeHours: true }),
        minRuns: r.number("min_runs", { min: 1, max: 1e9, integer: true }, 20),
        above,
        baseline: windows === null || factor === null ? null : { windows, factor, minIncrease },
      };
      break;
    }
    case "new_error": {
      const windowMs = r.duration("window", 24 * HOUR, { minMs: HOUR, wholeHours: true });
      const lookbackMs = r.duration("lookback", 30 * 24 * HOUR, { minMs: HOUR, wholeHours: true });
      rule = {
        ...base,
        type,
        scope: scopeOf(r),
        kind: kindOf(r),
        repoSource: r.string("repo_source"),
        on: r.oneOf("on", ["signature", "exit_code"] as const, "signature"),
        windowMs,
        lookbackMs,
        minFailures: r.number("min_failures", { min: 1, max: 1e9, integer: true }, 1),
      };
      break;
    }
    case "no_reports":
      rule = { ...base, type, forMs: r.duration("for", null, { minMs: 60_000 }) };
      break;
    case "rejected": {
      const reasons = r.strings("reasons") ?? REJECT_REASONS.filter((x) => x !== "repaired");
      const bad = reasons.find((x) => !(REJECT_REASONS as readonly string[]).includes(x));
      if (bad !== undefined)
        r.fail("reasons", `reasons holds ${JSON.stringify(bad)}; reasons are ${REJECT_REASONS.join(", ")}`);
      rule = {
        ...base,
        type,
        reasons: reasons as RejectReason[],
        windowMs: r.duration("window", null, { minMs: HOUR, wholeHours: true }),
        above: r.number("above", { min: 0, max: 1000 }, 0.1),
        minCount: r.number("min_count", { min: 1, max: 1e9, integer: true }, 10),
      };
      break;
    }
  }
  r.done(`a ${type} rule`);
  return rule;
}

/**
 * The line of a TOML syntax error. Bun 1.4.5's parser reports line numbers that drift from one
 * parse to the next in a process (and columns that are not columns), so the line is found here:
 * the first prefix of the file that fails the same way.
 */
function syntaxErrorLine(text: string, message: string): number | null {
  const lines = text.split("\n");
  for (let k = 1; k <= lines.length; k++) {
    try {
      Bun.TOML.parse(`${lines.slice(0, k).join("\n")}\n`);
    } catch (e) {
      if (e instanceof Error && e.message === message) return k;
    }
  }
  return null;
}

/** Parses and checks an alerts file's text; `env` fills ${NAME} in channel values. */
export function parseAlerts(file: string, text: string, env: Record<string, string | undefined>): AlertsConfig {
  const at = locate(text);
  const prefix = `alerts file ${file}`;
  let doc: Table;
  try {
    doc = Bun.TOML.parse(text) as Table;
  } catch (e) {
    const why = (e instanceof Error ? e.message : String(e)).replace(/^TOML Parse error:\s*/, "");
    const line = syntaxErrorLine(text, e instanceof Error ? e.message : "");
    throw new ConfigError(`${prefix}${line === null ? "" : `, line ${line}`}: not valid TOML: ${why}`);
  }
  const lineOf = (n: number | null) => (n === null ? "" : `, line ${n}`);
  const top = new Reader(doc, (key) => `${prefix}${lineOf(key === null ? null : at.key("", key))}`, env, false);

  const channels: Channel[] = [];
  const channelTables = doc.channel;
  if (channelTables !== undefined && !isTable(channelTables))
    top.fail("channel", `channels are tables: [channel.<name>] with type = "ntfy" and its settings`);
  for (const [name, table] of Object.entries((channelTables as Table | undefined) ?? {})) {
    const path = `channel.${name}`;
    const where = (key: string | null) =>
      `${prefix}${lineOf(key === null ? at.table(path) : at.key(path, key))} (channel ${name})`;
    if (!isTable(table)) throw new ConfigError(`${where(null)}: a channel is a table, [channel.${name}]`);
    channels.push(channelOf(name, new Reader(table, where, env, true)));
  }
  const names = new Set(channels.map((c) => c.name));

  const ruleTables = doc.rule;
  if (ruleTables !== undefined && (!Array.isArray(ruleTables) || !ruleTables.every(isTable)))
    top.fail("rule", "rules are [[rule]] tables, one per rule");
  const defaults = {
    sendTo: top.strings("send_to"),
    cooldownMs: top.duration("cooldown", DEFAULTS.cooldownMs, { minMs: 0 }),
  };
  const unknownDefault = defaults.sendTo?.find((c) => !names.has(c));
  if (unknownDefault !== undefined)
    top.fail("send_to", `send_to names channel ${JSON.stringify(unknownDefault)}, which is not defined`);
  const rules: Rule[] = [];
  ((ruleTables as Table[] | undefined) ?? []).forEach((table, i) => {
    const path = `rule.${i}`;
    const id = typeof table.id === "string" ? table.id : null;
    const where = (key: string | null) =>
      `${prefix}${lineOf(key === null ? at.table(path) : at.key(path, key))} (${id === null ? `rule ${i + 1}` : `rule ${id}`})`;
    const rule = ruleOf(new Reader(table, where, env, false), defaults, names);
    if (rules.some((other) => other.id === rule.id))
      throw new ConfigError(
        `${where("id")}: a second rule with id ${rule.id}; ids name rules in messages, the API and silences, so each must be its own`,
      );
    rules.push(rule);
  });
  const evaluateEveryMs = top.duration("evaluate_every", DEFAULTS.evaluateEveryMs, { minMs: 10_000 });
  const historyMs = top.duration("history", DEFAULTS.historyMs, { minMs: 24 * HOUR });
  top.readElsewhere("channel", "rule");
  top.done("the top level of the file");
  return { file, evaluateEveryMs, historyMs, channels, rules };
}

/** Reads and checks the alerts file at `path` (a missing or unreadable file is a ConfigError too). */
export async function loadAlerts(path: string, env: Record<string, string | undefined>): Promise<AlertsConfig> {
  const file = Bun.file(path);
  let text: string;
  try {
    text = await file.text();
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new ConfigError(
      code === "ENOENT"
        ? `alerts file ${path} does not exist; check --alerts (or INSTALLSTATS_ALERTS), or write one (docs/alerts.md has a complete example)`
        : code === "EACCES"
          ? `alerts file ${path} cannot be read by this user; chmod it, or run as its owner`
          : code === "EISDIR"
            ? `alerts file ${path} is a directory; --alerts names the file itself`
            : `alerts file ${path} cannot be read: ${(e as Error).message}`,
    );
  }
  return parseAlerts(path, text, env);
}

const pct = (r: number): string => `${Number((r * 100).toFixed(2))}%`;
const hours = (ms: number): string =>
  ms % (24 * HOUR) === 0 ? `${ms / (24 * HOUR)}d` : ms % HOUR === 0 ? `${ms / HOUR}h` : `${Math.round(ms / 60_000)}m`;
const scopeText = (s: AppScope): string =>
  "app" in s ? `app ${s.app}` : "each" in s ? "each app" : "all apps together";

/** A rule in one sentence, as the API, CLI and dashboard show it. */
export function describeRule(rule: Rule): string {
  switch (rule.type) {
    case "failure_rate": {
      const tests = [
        rule.above === null ? null : `above ${pct(rule.above)}`,
        rule.baseline
          ? `at least ${rule.baseline.factor}x and ${pct(rule.baseline.minIncrease)} above its rate over the previous ${rule.baseline.windows} windows`
          : null,
      ].filter((t) => t !== null);
      return `failure rate of ${scopeText(rule.scope)} over ${hours(rule.windowMs)} ${tests.join(" and ")} (at least ${rule.minRuns} finished runs)`;
    }
    case "new_error":
      return `a new ${rule.on === "signature" ? "error signature" : "exit code"} for ${scopeText(rule.scope)}: failing in the last ${hours(rule.windowMs)}, never in the ${hours(rule.lookbackMs)} before`;
    case "no_reports":
      return `no reports at all for ${hours(rule.forMs)}`;
    case "rejected":
      return `${rule.reasons.join(", ")} above ${rule.above} per run started over ${hours(rule.windowMs)} (at least ${rule.minCount})`;
  }
}
