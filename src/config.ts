// One typed config object: command-line flags > INSTALLSTATS_* environment > defaults.
import type { Level } from "./log.ts";
import { HOUR } from "./domain/time.ts";

export type Durability = "full" | "normal";

/** Issue trackers of a script collection the dashboard can open issues in (src/issues/). */
const TRACKERS = ["github", "gitea", "forgejo"] as const;
export type TrackerKind = (typeof TRACKERS)[number];

export interface Config {
  host: string;
  port: number;
  /** SQLite database file, or a postgres:// URL. */
  db: string;
  /** A file holding only the PostgreSQL password, for URLs without one (before PGPASSWORD and ~/.pgpass); null = none. */
  dbPasswordFile: string | null;
  /** postgres:// URL of a streaming replica of `db` that reads may use; null = reads go to `db`. */
  readDb: string | null;
  /** Replay lag past which reads leave the replica for the primary. */
  readMaxLagMs: number;
  /** Largest request body accepted, in bytes; larger bodies get 413. */
  maxBodyBytes: number;
  /** Longest error text kept; longer texts are cut. */
  maxErrorLength: number;
  /** Longest value kept for every other string field. */
  maxFieldLength: number;
  /** Replace IPv4/IPv6 addresses found in error texts with placeholders. */
  maskIps: boolean;
  /** SQLite `synchronous` level in WAL mode: full survives power loss, normal only process crashes. */
  durability: Durability;
  /** Most reports written in one transaction. */
  maxBatch: number;
  logLevel: Level;
  /** Required (Bearer) for reads and the dashboard when set; null = reads are public. */
  readToken: string | null;
  /** Required (Bearer) for admin actions; null = admin actions are disabled. */
  adminToken: string | null;
  /** Origins allowed to read cross-origin; empty = none, ["*"] = any. */
  corsOrigins: string[];
  /** Ingestion requests per second per client (token bucket); 0 = no limit. Default 5 (300 per minute, as the community's service). */
  rateLimit: number;
  /** Requests a client may send at once before the rate applies. */
  rateBurst: number;
  /** Leading bits of an IPv4 address that make one client (32: each address its own). */
  rateLimitV4Prefix: number;
  /** Leading bits of an IPv6 address that make one client (64: a customer's network, which holds 2^64 addresses). */
  rateLimitV6Prefix: number;
  /** Peers whose X-Forwarded-For is believed (reverse proxies); addresses or CIDRs. */
  trustedProxies: string[];
  /** Installs still in progress after this long become outcome "unknown"; 0 = never. */
  stuckAfterMs: number;
  /** Installs and rejected reports older than this are deleted; 0 = keep forever. */
  retentionMs: number;
  /** Where automatic backups go; null = "backups" beside the database. */
  backupDir: string | null;
  /** Time between automatic backups; 0 = none. */
  backupEveryMs: number;
  /** Automatic backups kept (the oldest are deleted). */
  backupKeep: number;
  /** Bytes the rejected-reports log may use (bodies compressed and stored once); past it bodies are cut to their head. */
  logBudget: number;
  /** Bytes held reports may use; past it the oldest are applied without their start report. */
  heldBudget: number;
  /** Held reports whose start report has not come after this long are applied on their own; 0 = never. */
  heldExpiryMs: number;
  /** Longest one read of records may take (they run off the thread that acknowledges reports); past it: 503. 0 = no limit. */
  readBudgetMs: number;
  /** Serve the public stats page and JSON (/public, /public/stats.json) without the read token. */
  publicStats: boolean;
  /** Privacy floor of the public stats: apps with fewer installs in a window are merged into "other". */
  publicMinInstalls: number;
  /** The alerts file (rules and channels, TOML); null = no alerts. */
  alerts: string | null;
  /** Base URL of the dashboard as people reach it, for links in alerts; null = from the listen address. */
  publicUrl: string | null;
  /** Upstream collector every accepted report is relayed to (origin, or a URL ending in /telemetry); null = no relay. */
  relayUrl: string | null;
  /** Reports of these protocols are relayed: telemetry, upload (both /upload paths). */
  relayProtocols: string[];
  /** Only reports of these repo_source values or owner/repo slugs are relayed; empty = all. */
  relayRepos: string[];
  /** Wire fields left out of relayed reports (e.g. error); empty = every field the protocol carries. */
  relayOmit: string[];
  /** Bytes of report bodies the relay's outbox may hold; past it the oldest entries are dropped. */
  relayMaxBytes: number;
  /** Longest one request to the upstream may take before it counts as failed. */
  relayTimeoutMs: number;
  /** Requests per second to the upstream at most (per node); 0 = no limit. */
  relayRate: number;
  /** The script collection's issue tracker, where issues are opened from error signatures; null = off. */
  tracker: TrackerKind | null;
  /** Its API address; null = https://api.github.com for github (gitea and forgejo need one: the server's address). */
  trackerUrl: string | null;
  /** owner/name of the repository issues are opened in. */
  trackerRepo: string | null;
  /** The tracker's token: from the environment only (a flag would show in the process list). */
  trackerToken: string | null;
  /** A file holding only the token (a systemd credential, a docker secret), read at each use; wins over trackerToken. */
  trackerTokenFile: string | null;
  /** Labels new issues get, by name; names the tracker does not have are left out (gitea, forgejo) and said so. */
  trackerLabels: string[];
}

export const defaults: Config = {
  host: "0.0.0.0",
  port: 8080,
  db: "installstats.db",
  dbPasswordFile: null,
  readDb: null,
  readMaxLagMs: 5000,
  maxBodyBytes: 256 * 1024,
  maxErrorLength: 131072,
  maxFieldLength: 128,
  maskIps: true,
  durability: "full",
  maxBatch: 1000,
  logLevel: "info",
  readToken: null,
  adminToken: null,
  corsOrigins: [],
  // 300 per minute with a burst of 60, as the community's service: an installer run sends 4-10 reports.
  rateLimit: 5,
  rateBurst: 60,
  // Every ISP customer holds at least a /64 of IPv6 (often a /56); an IPv4 address is usually one household.
  rateLimitV4Prefix: 32,
  rateLimitV6Prefix: 64,
  trustedProxies: [],
  stuckAfterMs: 12 * HOUR,
  retentionMs: 0,
  backupDir: null,
  backupEveryMs: 0,
  backupKeep: 7,
  // Sized for a small disk (a 8 GB appliance volume): what an anonymous client can add besides executions.
  logBudget: 64 * 1024 * 1024,
  heldBudget: 16 * 1024 * 1024,
  heldExpiryMs: 7 * 24 * HOUR,
  // Every read of the dashboard and API takes well under a second at 10M records; a scan that
  // runs past this is stopped (it never holds up ingestion, but it holds a read thread).
  readBudgetMs: 30_000,
  publicStats: false,
  // Small enough for a homelab's own page, large enough that one person's installs do not show.
  publicMinInstalls: 10,
  alerts: null,
  publicUrl: null,
  relayUrl: null,
  relayProtocols: ["telemetry", "upload"],
  relayRepos: [],
  relayOmit: [],
  // ~60,000 start reports, or ~5,000 failures with their 10 KiB log: days of a busy homelab.
  relayMaxBytes: 64 * 1024 * 1024,
  // The clients allow 5 s (10 s for the final report); an upstream slower than this is failing.
  relayTimeoutMs: 10_000,
  // The community's service allows 300 reports a minute per address (burst 60): stay below it.
  relayRate: 4,
  tracker: null,
  trackerUrl: null,
  trackerRepo: null,
  trackerToken: null,
  trackerTokenFile: null,
  trackerLabels: [],
};

type Key = keyof Config;
type Kind =
  | "text"
  | "optional-text"
  | "optional-url"
  | "port"
  | "count"
  | "size"
  | "bool"
  | "duration"
  | "list"
  | "durability"
  | "level"
  | "tracker"
  | "repo"
  | "v4-prefix"
  | "v6-prefix";

interface Option {
  key: Key;
  flag: string;
  env: string;
  kind: Kind;
  help: string;
  /** What the default means when it is "unset" or an empty list, where that is not obvious. */
  unset?: string;
  /** The manual's page (and section) that says more, relative to docs/. */
  see?: string;
  /** Read from the environment only, never from the command line (where every user's `ps` shows it), and never shown. */
  secret?: true;
}

/**
 * Every setting, with its flag and environment variable: `--help` and docs/configuration.md
 * (`bun run docs:config`) are both generated from this.
 */
const options: readonly Option[] = [
  { key: "host", flag: "host", env: "INSTALLSTATS_HOST", kind: "text", help: "address to listen on" },
  { key: "port", flag: "port", env: "INSTALLSTATS_PORT", kind: "port", help: "TCP port (0 = any free port)" },
  {
    key: "db",
    flag: "db",
    env: "INSTALLSTATS_DB",
    kind: "text",
    help: "SQLite database file (its directory must exist), or a postgres:// URL",
    see: "postgresql.md",
  },
  {
    key: "dbPasswordFile",
    flag: "db-password-file",
    env: "INSTALLSTATS_DB_PASSWORD_FILE",
    kind: "optional-text",
    help: "file holding only the PostgreSQL password (a systemd credential, a docker secret), for URLs without one; else PGPASSWORD, else ~/.pgpass (PGPASSFILE)",
    see: "postgresql.md#passwords",
  },
  {
    key: "readDb",
    flag: "read-db",
    env: "INSTALLSTATS_READ_DB",
    kind: "optional-text",
    help: "postgres:// URL of a streaming replica of --db for the read API and dashboard",
    see: "postgresql.md#4-a-replica-for-reads",
  },
  {
    key: "readMaxLagMs",
    flag: "read-max-lag",
    env: "INSTALLSTATS_READ_MAX_LAG",
    kind: "duration",
    help: "replica replay lag past which reads go to the primary instead (e.g. 5s)",
    see: "postgresql.md#4-a-replica-for-reads",
  },
  {
    key: "maxBodyBytes",
    flag: "max-body",
    env: "INSTALLSTATS_MAX_BODY",
    kind: "size",
    help: "largest request body in bytes; accepts 256k, 1m",
    see: "security.md#limits-and-budgets",
  },
  {
    key: "maxErrorLength",
    flag: "max-error-length",
    env: "INSTALLSTATS_MAX_ERROR_LENGTH",
    kind: "count",
    help: "characters kept of an error text (current clients send up to ~10 KiB of log)",
  },
  {
    key: "maxFieldLength",
    flag: "max-field-length",
    env: "INSTALLSTATS_MAX_FIELD_LENGTH",
    kind: "count",
    help: "characters kept of other text fields",
  },
  {
    key: "maskIps",
    flag: "mask-ips",
    env: "INSTALLSTATS_MASK_IPS",
    kind: "bool",
    help: "mask IP addresses in error texts (true|false)",
    see: "privacy.md",
  },
  {
    key: "durability",
    flag: "durability",
    env: "INSTALLSTATS_DURABILITY",
    kind: "durability",
    help: "full (survives power loss) | normal (survives crashes, faster)",
    see: "operations.md#durability-and-the-sqlite-setup",
  },
  {
    key: "maxBatch",
    flag: "max-batch",
    env: "INSTALLSTATS_MAX_BATCH",
    kind: "count",
    help: "most reports per write transaction",
  },
  {
    key: "logLevel",
    flag: "log-level",
    env: "INSTALLSTATS_LOG_LEVEL",
    kind: "level",
    help: "debug | info | warn | error",
  },
  {
    key: "readToken",
    flag: "read-token",
    env: "INSTALLSTATS_READ_TOKEN",
    kind: "optional-text",
    help: "bearer token required for reads and the dashboard (prefer the environment variable)",
    see: "security.md#access",
  },
  {
    key: "adminToken",
    flag: "admin-token",
    env: "INSTALLSTATS_ADMIN_TOKEN",
    kind: "optional-text",
    help: "bearer token for admin actions; unset = admin API off (prefer the environment variable)",
    see: "security.md#access",
  },
  {
    key: "corsOrigins",
    flag: "cors-origins",
    env: "INSTALLSTATS_CORS_ORIGINS",
    kind: "list",
    help: "comma-separated origins allowed to read cross-origin, or *",
    see: "security.md#headers-and-cors",
  },
  {
    key: "rateLimit",
    flag: "rate-limit",
    env: "INSTALLSTATS_RATE_LIMIT",
    kind: "count",
    help: "ingestion requests per second per client, 0 = off",
    see: "security.md#rate-limiting",
  },
  {
    key: "rateBurst",
    flag: "rate-burst",
    env: "INSTALLSTATS_RATE_BURST",
    kind: "count",
    help: "requests a client may send at once",
    see: "security.md#rate-limiting",
  },
  {
    key: "rateLimitV4Prefix",
    flag: "rate-limit-v4-prefix",
    env: "INSTALLSTATS_RATE_LIMIT_V4_PREFIX",
    kind: "v4-prefix",
    help: "IPv4 clients in one network of this prefix length share a rate limit and a share of the budgets (1-32; 32: each address its own)",
    see: "security.md#rate-limiting",
  },
  {
    key: "rateLimitV6Prefix",
    flag: "rate-limit-v6-prefix",
    env: "INSTALLSTATS_RATE_LIMIT_V6_PREFIX",
    kind: "v6-prefix",
    help: "IPv6 clients in one network of this prefix length share a rate limit and a share of the budgets (1-128; 64: a customer's network, 56 for ISPs that hand out /56)",
    see: "security.md#rate-limiting",
  },
  {
    key: "trustedProxies",
    flag: "trusted-proxies",
    env: "INSTALLSTATS_TRUSTED_PROXIES",
    kind: "list",
    help: "comma-separated proxy addresses/CIDRs whose X-Forwarded-For is believed",
    see: "security.md#rate-limiting",
  },
  {
    key: "stuckAfterMs",
    flag: "stuck-after",
    env: "INSTALLSTATS_STUCK_AFTER",
    kind: "duration",
    help: "installs in progress this long become outcome unknown (e.g. 12h), 0 = never",
    see: "operations.md#scheduled-jobs-inside-serve",
  },
  {
    key: "retentionMs",
    flag: "retention",
    env: "INSTALLSTATS_RETENTION",
    kind: "duration",
    help: "delete installs older than this (e.g. 400d), 0 = keep forever",
    see: "operations.md#scheduled-jobs-inside-serve",
  },
  {
    key: "backupDir",
    flag: "backup-dir",
    env: "INSTALLSTATS_BACKUP_DIR",
    kind: "optional-text",
    help: "directory of automatic backups",
    unset: "backups/ beside the database",
    see: "operations.md#backups",
  },
  {
    key: "backupEveryMs",
    flag: "backup-every",
    env: "INSTALLSTATS_BACKUP_EVERY",
    kind: "duration",
    help: "time between automatic backups (e.g. 1d), 0 = none",
    see: "operations.md#backups",
  },
  {
    key: "backupKeep",
    flag: "backup-keep",
    env: "INSTALLSTATS_BACKUP_KEEP",
    kind: "count",
    help: "automatic backups kept",
    see: "operations.md#backups",
  },
  {
    key: "logBudget",
    flag: "log-budget",
    env: "INSTALLSTATS_LOG_BUDGET",
    kind: "size",
    help: "bytes the rejected-reports log may use (bodies compressed, each kept once; past it only their head); accepts 64m, 1g",
    see: "security.md#limits-and-budgets",
  },
  {
    key: "heldBudget",
    flag: "held-budget",
    env: "INSTALLSTATS_HELD_BUDGET",
    kind: "size",
    help: "bytes final reports waiting for their start report may use; past it the oldest are applied without it; accepts 16m",
    see: "security.md#limits-and-budgets",
  },
  {
    key: "heldExpiryMs",
    flag: "held-expiry",
    env: "INSTALLSTATS_HELD_EXPIRY",
    kind: "duration",
    help: "final reports whose start report has not come after this long are applied without it (e.g. 7d), 0 = never",
    see: "security.md#limits-and-budgets",
  },
  {
    key: "readBudgetMs",
    flag: "read-budget",
    env: "INSTALLSTATS_READ_BUDGET",
    kind: "duration",
    help: "longest one read of records may take before it is stopped with 503 (e.g. 30s), 0 = no limit",
    see: "security.md#reads-cannot-stall-ingestion",
  },
  {
    key: "publicStats",
    flag: "public-stats",
    env: "INSTALLSTATS_PUBLIC_STATS",
    kind: "bool",
    help: "serve installs and failure rates per app at /public and /public/stats.json without a token (true|false)",
    see: "public-page.md",
  },
  {
    key: "publicMinInstalls",
    flag: "public-min-installs",
    env: "INSTALLSTATS_PUBLIC_MIN_INSTALLS",
    kind: "count",
    help: 'public stats: apps with fewer installs in a window are merged into "other"',
    see: "public-page.md",
  },
  {
    key: "alerts",
    flag: "alerts",
    env: "INSTALLSTATS_ALERTS",
    kind: "optional-text",
    help: "alerts file: rules and channels in TOML (docs/alerts.md has a complete example)",
    unset: "no alerts",
    see: "alerts.md",
  },
  {
    key: "publicUrl",
    flag: "public-url",
    env: "INSTALLSTATS_PUBLIC_URL",
    kind: "optional-url",
    help: "the dashboard's address as people reach it (e.g. https://stats.example.org), for links in alerts",
    unset: "the listen address",
    see: "alerts.md",
  },
  {
    key: "relayUrl",
    flag: "relay-url",
    env: "INSTALLSTATS_RELAY_URL",
    kind: "optional-url",
    help: "relay every accepted report to this upstream: its origin (…/telemetry, …/upload and …/upload/updatestatus are appended) or a URL ending in /telemetry",
    unset: "off",
    see: "relay.md",
  },
  {
    key: "relayProtocols",
    flag: "relay-protocols",
    env: "INSTALLSTATS_RELAY_PROTOCOLS",
    kind: "list",
    help: "relay reports that came by these protocols: telemetry, upload (/upload and /upload/updatestatus); the community's service takes telemetry only",
    see: "relay.md#settings",
  },
  {
    key: "relayRepos",
    flag: "relay-repos",
    env: "INSTALLSTATS_RELAY_REPOS",
    kind: "list",
    help: "relay only reports of these repo_source values or owner/repo slugs, comma-separated (e.g. ProxmoxVE); empty = all",
    unset: "all",
    see: "relay.md#settings",
  },
  {
    key: "relayOmit",
    flag: "relay-omit",
    env: "INSTALLSTATS_RELAY_OMIT",
    kind: "list",
    help: "fields never relayed, comma-separated wire names (e.g. error,cpu_model,gpu_model)",
    see: "relay.md#settings",
  },
  {
    key: "relayMaxBytes",
    flag: "relay-max-outbox",
    env: "INSTALLSTATS_RELAY_MAX_OUTBOX",
    kind: "size",
    help: "bytes of reports waiting for the upstream; past it the oldest are dropped (counted); accepts 64m, 1g",
    see: "relay.md#the-bound-the-oldest-are-dropped",
  },
  {
    key: "relayTimeoutMs",
    flag: "relay-timeout",
    env: "INSTALLSTATS_RELAY_TIMEOUT",
    kind: "duration",
    help: "longest one request to the upstream may take before it counts as failed (e.g. 10s)",
    see: "relay.md#settings",
  },
  {
    key: "relayRate",
    flag: "relay-rate",
    env: "INSTALLSTATS_RELAY_RATE",
    kind: "count",
    help: "requests per second to the upstream at most, per node; 0 = no limit",
    see: "relay.md#settings",
  },
  {
    key: "tracker",
    flag: "tracker",
    env: "INSTALLSTATS_TRACKER",
    kind: "tracker",
    help: "issue tracker of the script collection, to open issues from error signatures in the dashboard: github | gitea | forgejo",
    unset: "off",
    see: "api.md#issues-from-error-signatures-admin",
  },
  {
    key: "trackerUrl",
    flag: "tracker-url",
    env: "INSTALLSTATS_TRACKER_URL",
    kind: "optional-url",
    help: "the tracker's address: for gitea and forgejo the server (e.g. https://codeberg.org); for github https://api.github.com unless GitHub Enterprise (https://HOST/api/v3)",
  },
  {
    key: "trackerRepo",
    flag: "tracker-repo",
    env: "INSTALLSTATS_TRACKER_REPO",
    kind: "repo",
    help: "owner/name of the repository issues are opened in (e.g. community-scripts/ProxmoxVE)",
  },
  {
    key: "trackerToken",
    flag: "tracker-token",
    env: "INSTALLSTATS_TRACKER_TOKEN",
    kind: "optional-text",
    help: "token of the tracker (environment only; or --tracker-token-file)",
    secret: true,
  },
  {
    key: "trackerTokenFile",
    flag: "tracker-token-file",
    env: "INSTALLSTATS_TRACKER_TOKEN_FILE",
    kind: "optional-text",
    help: "file holding only the tracker's token (a systemd credential, a docker secret), read at each use",
  },
  {
    key: "trackerLabels",
    flag: "tracker-labels",
    env: "INSTALLSTATS_TRACKER_LABELS",
    kind: "list",
    help: "labels new issues get, comma-separated (e.g. bug,telemetry); names the tracker does not have are left out",
  },
];

export class ConfigError extends Error {}

/** The read replica the engine opens beside --db, if any. */
export const readReplicaOf = (config: Config): { url: string; maxLagMs: number } | null =>
  config.readDb === null ? null : { url: config.readDb, maxLagMs: config.readMaxLagMs };

const LEVELS: readonly Level[] = ["debug", "info", "warn", "error"];
const DURATION_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: HOUR, d: 24 * HOUR, w: 7 * 24 * HOUR };

/** "400d", "12h", "90m", "2w", "30s"; "0" means none. NaN when malformed. */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (t === "0") return 0;
  const m = /^(\d+(?:\.\d+)?)\s*([smhdw])$/i.exec(t);
  return m ? Math.round(Number(m[1]) * DURATION_UNITS[m[2]!.toLowerCase()]!) : Number.NaN;
}

function parseSize(text: string): number {
  const m = /^\s*(\d+)\s*([kmg]?)i?b?\s*$/i.exec(text);
  if (!m) return Number.NaN;
  const scale = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(m[2] ?? "").toLowerCase()] ?? 1;
  return Number(m[1]) * scale;
}

function parseBool(text: string): boolean | undefined {
  const t = text.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(t)) return true;
  if (["0", "false", "no", "off"].includes(t)) return false;
  return undefined;
}

function coerce(o: Option, raw: string, source: string): Config[Key] {
  const fail = (what: string): never => {
    throw new ConfigError(`${source}: ${what}, got ${JSON.stringify(raw)}`);
  };
  switch (o.kind) {
    case "text":
      return raw.trim() === "" ? fail("must not be empty") : raw;
    case "optional-text":
      return raw.trim() === "" ? null : raw;
    case "optional-url": {
      if (raw.trim() === "") return null;
      const url = URL.parse(raw.trim());
      if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
        return fail("must be an http:// or https:// URL such as https://example.org");
      // Paths are appended to it (links in alerts, the relay's report paths).
      if (url.search !== "" || url.hash !== "")
        return fail("must not have a query or fragment (paths are appended to it)");
      return raw.trim().replace(/\/+$/, "");
    }
    case "bool":
      return parseBool(raw) ?? fail("must be true or false");
    case "durability":
      return raw === "full" || raw === "normal" ? raw : fail("must be full or normal");
    case "tracker":
      if (raw.trim() === "") return null;
      return TRACKERS.find((k) => k === raw.trim().toLowerCase()) ?? fail(`must be one of ${TRACKERS.join(", ")}`);
    case "repo":
      if (raw.trim() === "") return null;
      return /^[\w.-]+\/[\w.-]+$/.test(raw.trim())
        ? raw.trim()
        : fail("must be owner/name, such as community-scripts/ProxmoxVE");
    case "level":
      return LEVELS.find((l) => l === raw) ?? fail(`must be one of ${LEVELS.join(", ")}`);
    case "list":
      return raw
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "");
    case "duration": {
      const ms = parseDuration(raw);
      return Number.isFinite(ms) ? ms : fail("must be a duration such as 30m, 12h, 400d or 0");
    }
    case "size": {
      const n = parseSize(raw);
      return Number.isSafeInteger(n) && n > 0 ? n : fail("must be a size such as 262144 or 256k");
    }
    case "port": {
      const n = Number(raw);
      return Number.isInteger(n) && n >= 0 && n <= 65535 ? n : fail("must be a port number 0-65535");
    }
    case "v4-prefix":
    case "v6-prefix": {
      const max = o.kind === "v4-prefix" ? 32 : 128;
      const n = Number(raw.trim().replace(/^\//, ""));
      return Number.isInteger(n) && n >= 1 && n <= max
        ? n
        : fail(`must be a prefix length from 1 to ${max}, such as ${o.kind === "v4-prefix" ? "32 or 24" : "64 or 56"}`);
    }
    case "count": {
      const n = Number(raw);
      const zeroAllowed = o.key === "rateLimit" || o.key === "relayRate";
      return Number.isInteger(n) && (n > 0 || (zeroAllowed && n === 0))
        ? n
        : fail(`must be a ${zeroAllowed ? "non-negative" : "positive"} whole number`);
    }
  }
}

/** A setting, by its key in Config; commands name the settings they use (src/cli/command.ts). */
export type SettingKey = Key;

/** Every setting's key, in the order of `--help`. */
export const SETTINGS: readonly SettingKey[] = options.map((o) => o.key);

/** The command-line flag of a setting, without dashes ("max-body"); null for a secret (environment only). */
export const flagOf = (key: SettingKey): string | null => {
  const o = options.find((x) => x.key === key)!;
  return o.secret ? null : o.flag;
};

export function loadConfig(
  flags: Partial<Record<string, string | boolean | undefined>>,
  env: Record<string, string | undefined>,
): Config {
  const config: Config = { ...defaults };
  for (const o of options) {
    const flag = o.secret ? undefined : flags[o.flag];
    const raw = typeof flag === "string" ? flag : env[o.env];
    if (raw === undefined) continue;
    const source = typeof flag === "string" ? `--${o.flag}` : o.env;
    // Each key gets a value of its own type; the cast only joins the union back to the record.
    (config as unknown as Record<Key, Config[Key]>)[o.key] = coerce(o, raw, source);
  }
  return config;
}

function shown(o: Option): string {
  const value = defaults[o.key];
  if (value === null || (Array.isArray(value) && value.length === 0))
    return o.unset ?? (value === null ? "unset" : "none");
  if (Array.isArray(value)) return value.join(",");
  if (o.kind === "duration")
    return value === 0 ? "0 (off)" : Number(value) < HOUR ? `${Number(value) / 1000}s` : `${Number(value) / HOUR}h`;
  if (o.kind === "size") {
    const n = Number(value);
    return n % 1024 ** 2 === 0 ? `${n / 1024 ** 2}m` : n % 1024 === 0 ? `${n / 1024}k` : String(n);
  }
  return String(value);
}

/** Help lines of the given settings: flag, what it does, its environment variable and default. */
export function settingsHelp(keys: readonly SettingKey[]): { flag: string; text: string }[] {
  return options
    .filter((o) => keys.includes(o.key))
    .map((o) =>
      o.secret
        ? { flag: o.env, text: `${o.help} [environment only, default unset]` }
        : { flag: `--${o.flag}`, text: `${o.help} [${o.env}, default ${shown(o)}]` },
    );
}

/** The tracker issues are opened in, checked as a whole; null when off. */
export interface TrackerSettings {
  kind: TrackerKind;
  /** The API's base: https://api.github.com, https://HOST/api/v3, or a gitea/forgejo server's address with /api/v1. */
  apiUrl: string;
  repo: string;
  token: { env: string } | { file: string };
  labels: string[];
}

/** The tracker settings, or a ConfigError naming what is missing (one line, with the fix). */
export function trackerOf(config: Config): TrackerSettings | null {
  if (config.tracker === null) return null;
  const kind = config.tracker;
  if (config.trackerRepo === null)
    throw new ConfigError(
      `INSTALLSTATS_TRACKER=${kind} needs the repository issues go to: set --tracker-repo (INSTALLSTATS_TRACKER_REPO) to owner/name`,
    );
  let apiUrl: string;
  if (kind === "github") apiUrl = config.trackerUrl ?? "https://api.github.com";
  else if (config.trackerUrl === null)
    throw new ConfigError(
      `INSTALLSTATS_TRACKER=${kind} needs the server's address: set --tracker-url (INSTALLSTATS_TRACKER_URL), e.g. https://codeberg.org`,
    );
  else apiUrl = config.trackerUrl.endsWith("/api/v1") ? config.trackerUrl : `${config.trackerUrl}/api/v1`;
  const token =
    config.trackerTokenFile !== null
      ? { file: config.trackerTokenFile }
      : config.trackerToken !== null
        ? { env: config.trackerToken }
        : null;
  if (token === null)
    throw new ConfigError(
      `INSTALLSTATS_TRACKER=${kind} needs a token: set INSTALLSTATS_TRACKER_TOKEN, or --tracker-token-file (INSTALLSTATS_TRACKER_TOKEN_FILE) to a file holding it`,
    );
  return { kind, apiUrl, repo: config.trackerRepo, token, labels: config.trackerLabels };
}

/** Every setting as the manual lists it (scripts/docs-config.ts writes docs/configuration.md from it). */
export const settingsReference = (): {
  key: SettingKey;
  flag: string;
  env: string;
  default: string;
  help: string;
  see: string | null;
}[] =>
  options.map((o) => ({
    key: o.key,
    flag: o.secret ? "(environment only)" : `--${o.flag}`,
    env: o.env,
    default: shown(o),
    help: o.help,
    see: o.see ?? null,
  }));
