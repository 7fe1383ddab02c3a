// One typed config object: command-line flags > INSTALLSTATS_* environment > defaults.

import type { Level } from "./ops/log.ts";

export type Durability = "full" | "normal";
const LEVELS: readonly Level[] = ["debug", "info", "warn", "error"];

export interface Config {
  host: string;
  port: number;
  /** SQLite database file. */
  db: string;
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
}

export const defaults: Config = {
  host: "0.0.0.0",
  port: 8080,
  db: "installstats.db",
  maxBodyBytes: 256 * 1024,
  maxErrorLength: 4096,
  maxFieldLength: 128,
  maskIps: true,
  durability: "full",
  maxBatch: 1000,
  logLevel: "info",
};

type Key = keyof Config;

interface Option {
  key: Key;
  flag: string;
  env: string;
  help: string;
}

/** Every setting, with its flag and environment variable; `--help` is generated from this. */
export const options: readonly Option[] = [
  { key: "host", flag: "host", env: "INSTALLSTATS_HOST", help: "address to listen on" },
  { key: "port", flag: "port", env: "INSTALLSTATS_PORT", help: "TCP port (0 = any free port)" },
  { key: "db", flag: "db", env: "INSTALLSTATS_DB", help: "SQLite database file" },
  { key: "maxBodyBytes", flag: "max-body", env: "INSTALLSTATS_MAX_BODY", help: "largest request body in bytes; accepts 256k, 1m" },
  { key: "maxErrorLength", flag: "max-error-length", env: "INSTALLSTATS_MAX_ERROR_LENGTH", help: "characters kept of an error text" },
  { key: "maxFieldLength", flag: "max-field-length", env: "INSTALLSTATS_MAX_FIELD_LENGTH", help: "characters kept of other text fields" },
  { key: "maskIps", flag: "mask-ips", env: "INSTALLSTATS_MASK_IPS", help: "mask IP addresses in error texts (true|false)" },
  { key: "durability", flag: "durability", env: "INSTALLSTATS_DURABILITY", help: "full (survives power loss) | normal (survives crashes, faster)" },
  { key: "maxBatch", flag: "max-batch", env: "INSTALLSTATS_MAX_BATCH", help: "most reports per write transaction" },
  { key: "logLevel", flag: "log-level", env: "INSTALLSTATS_LOG_LEVEL", help: "debug | info | warn | error" },
];

export class ConfigError extends Error {}

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

function coerce(key: Key, raw: string, source: string): Config[Key] {
  const fail = (what: string): never => {
    throw new ConfigError(`${source}: ${what}, got ${JSON.stringify(raw)}`);
  };
  switch (key) {
    case "host":
    case "db":
      return raw.trim() === "" ? fail("must not be empty") : raw;
    case "maskIps":
      return parseBool(raw) ?? fail("must be true or false");
    case "durability":
      return raw === "full" || raw === "normal" ? raw : fail("must be full or normal");
    case "logLevel":
      return LEVELS.find((l) => l === raw) ?? fail(`must be one of ${LEVELS.join(", ")}`);
    case "maxBodyBytes": {
      const n = parseSize(raw);
      return Number.isSafeInteger(n) && n > 0 ? n : fail("must be a size such as 262144 or 256k");
    }
    case "port": {
      const n = Number(raw);
      return Number.isInteger(n) && n >= 0 && n <= 65535 ? n : fail("must be a port number 0-65535");
    }
    default: {
      const n = Number(raw);
      return Number.isInteger(n) && n > 0 ? n : fail("must be a positive whole number");
    }
  }
}

/** Flags as `parseArgs` expects them, for the subcommands that take the config. */
export const configFlags = Object.fromEntries(options.map((o) => [o.flag, { type: "string" as const }]));

export function loadConfig(
  flags: Partial<Record<string, string | boolean | undefined>>,
  env: Record<string, string | undefined>,
): Config {
  const config: Config = { ...defaults };
  for (const o of options) {
    const flag = flags[o.flag];
    const fromEnv = env[o.env];
    const raw = typeof flag === "string" ? flag : fromEnv;
    if (raw === undefined) continue;
    const source = typeof flag === "string" ? `--${o.flag}` : o.env;
    // Each key gets a value of its own type; the cast only joins the union back to the record.
    (config as unknown as Record<Key, Config[Key]>)[o.key] = coerce(o.key, raw, source);
  }
  return config;
}

export function configHelp(): string {
  const width = Math.max(...options.map((o) => o.flag.length)) + 2;
  return options
    .map((o) => `  --${o.flag.padEnd(width)} ${o.help} [${o.env}, default ${String(defaults[o.key])}]`)
    .join("\n");
}
