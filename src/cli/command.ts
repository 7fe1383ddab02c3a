// What every CLI command is: a name, its own flags, the settings it uses, a run function.
// main.ts dispatches; every failure it knows ends as one line and an exit code (EXIT).
import { readReplicaOf, type Config, type Durability, type SettingKey } from "../config.ts";
import type { Engine, Workers } from "../store/engine.ts";
import { DatabaseMissingError, checkLocation, openEngine } from "../store/open.ts";
import { UsageError } from "./errors.ts";

export { UsageError };

export interface Flag {
  type: "string" | "boolean";
  short?: string;
  help: string;
}

export interface CommandContext {
  config: Config;
  flags: Record<string, string | boolean | undefined>;
  positionals: string[];
  version: string;
  out: (text: string) => void;
  err: (text: string) => void;
  /** Progress lines on a terminal; nothing when stderr is piped. */
  progress: (text: string) => void;
  /** Worker entry points, resolved by the entry module (the only one whose URL means something in the binary). */
  workers: Workers;
  /** The process's environment, as the config was read from it. */
  env: Readonly<Record<string, string | undefined>>;
  /**
   * Runs this command line again in this process (same PID) under `env`; returns only where the
   * runtime cannot, and then the command goes on as it is.
   */
  relaunch: (env: Record<string, string>) => void;
}

export interface Command {
  name: string;
  summary: string;
  /** Arguments after the flags, for the usage line, e.g. "<file>". */
  args?: string;
  flags?: Record<string, Flag>;
  /** The settings (config.ts) this command uses; only their flags are accepted and shown in its help. */
  settings: readonly SettingKey[];
  /** Exit code; a serve-like command resolves -1 and keeps running. */
  run(ctx: CommandContext): Promise<number> | number;
}

/** The hint for a database that is not where a command looks. */
export const missingDatabase = (location: string, flag = "--db (or INSTALLSTATS_DB)"): UsageError =>
  new UsageError(`no database at ${location}; name the right one with ${flag}`);

/**
 * Opens the command's database (--db), migrated. Only commands that put data in (`create`) make a
 * new one; the others refuse a missing database rather than report on an empty one they made.
 */
export function openDatabaseOf(ctx: CommandContext, opts: Omit<OpenLocationOptions, "flag">): Promise<Engine> {
  return openLocation(ctx.config.db, ctx, opts);
}

interface OpenLocationOptions {
  create: boolean;
  durability?: Durability;
  /** How messages name the location: "--from"; --db by default. */
  flag?: string;
  warn?: (text: string) => void;
  /** The caller has run checkLocation already (serve, before it takes the lock). */
  checked?: boolean;
  /** OpenOptions.labelLimit. */
  labelLimit?: number;
  /** OpenOptions.deferMonths. */
  deferMonths?: boolean;
}

/** Opens the database at `location` as openDatabaseOf opens --db (copy opens two). */
export async function openLocation(location: string, ctx: CommandContext, opts: OpenLocationOptions): Promise<Engine> {
  // Missing directories and permissions are named before SQLite answers "unable to open database file".
  if (!opts.checked) checkLocation(location, { create: opts.create });
  try {
    const readReplica = location === ctx.config.db ? readReplicaOf(ctx.config) : null;
    return await openEngine(location, {
      durability: opts.durability ?? ctx.config.durability,
      migrate: true,
      create: opts.create,
      readReplica,
      passwordFile: ctx.config.dbPasswordFile,
      labelLimit: opts.labelLimit,
      deferMonths: opts.deferMonths,
      warn: opts.warn ?? ((text) => ctx.err(`installstats: warning: ${text}\n`)),
    });
  } catch (e) {
    throw e instanceof DatabaseMissingError ? missingDatabase(location, opts.flag) : e;
  }
}

/** A flag's value as a positive whole number, or the default. */
export function countFlag(ctx: CommandContext, name: string, fallback: number): number {
  const raw = ctx.flags[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (typeof raw !== "string" || !Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`--${name} must be a positive whole number`);
  return n;
}

/** `\r`-overwritten progress on a terminal, silent when piped. */
export function terminalProgress(stream: NodeJS.WriteStream): (text: string) => void {
  if (!stream.isTTY) return () => {};
  let last = 0;
  return (text) => {
    const now = Date.now();
    if (text !== "" && now - last < 100) return; // a few updates a second is plenty
    last = now;
    stream.write(text === "" ? "\r\x1b[K" : `\r\x1b[K${text}`);
  };
}
