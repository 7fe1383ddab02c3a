#!/usr/bin/env bun
// CLI entry: `installstats <command> [options]`; each command lives in src/cli/.
import pkg from "../package.json" with { type: "json" };
import { ConfigError, flagOf, loadConfig } from "./config.ts";
import { closest, parseCommandLine, type OptionSpec } from "./cli/args.ts";
import { terminalProgress } from "./cli/command.ts";
import { CliError, EXIT, UsageError } from "./cli/errors.ts";
import { commandHelp, overview } from "./cli/help.ts";
import { COMMANDS, DEFAULT_COMMAND } from "./cli/commands.ts";
import { DatabaseOpenError } from "./store/engine.ts";
import { UnsupportedLocationError } from "./store/location.ts";
import { selfCommand } from "./maintenance/self-command.ts";

// scripts/release.ts stamps the commit and date in with --define; absent in development.
declare const INSTALLSTATS_BUILD: string;
const VERSION = pkg.version;
const BUILD = typeof INSTALLSTATS_BUILD === "string" ? INSTALLSTATS_BUILD : "";

/** Each option name, and the commands that have it: "--port is an option of serve". */
function optionOwners(): Map<string, string[]> {
  const owners = new Map<string, string[]>();
  for (const c of COMMANDS) {
    for (const name of [...Object.keys(c.flags ?? {}), ...c.settings.map(flagOf).filter((f) => f !== null)])
      owners.set(name, [...(owners.get(name) ?? []), c.name]);
  }
  return owners;
}

async function run(argv: string[]): Promise<number> {
  const first = argv[0];
  if (first === "-v" || first === "--version" || first === "version") {
    console.log(BUILD ? `${VERSION} (${BUILD})` : VERSION);
    return 0;
  }
  if (first === "help" || ((first === "-h" || first === "--help") && argv.length === 1)) {
    console.log(overview(COMMANDS, VERSION));
    return 0;
  }
  const named = first !== undefined && !first.startsWith("-");
  const command = named ? COMMANDS.find((c) => c.name === first) : DEFAULT_COMMAND;
  if (!command) {
    const guess = closest(
      first!,
      COMMANDS.map((c) => c.name),
    );
    throw new UsageError(
      `unknown command "${first}"; ${guess ? `did you mean ${guess}? (` : ""}see installstats --help${guess ? ")" : ""}`,
    );
  }
  const options: Record<string, OptionSpec> = { help: { type: "boolean", short: "h" } };
  for (const key of command.settings) {
    const flag = flagOf(key);
    if (flag !== null) options[flag] = { type: "string" };
  }
  for (const [name, f] of Object.entries(command.flags ?? {}))
    options[name] = f.short ? { type: f.type, short: f.short } : { type: f.type };
  const { values: flags, positionals } = parseCommandLine(named ? argv.slice(1) : argv, options, {
    command: command.name,
    elsewhere: optionOwners(),
  });
  if (flags.help) {
    console.log(commandHelp(command));
    return 0;
  }
  return command.run({
    config: loadConfig(flags, process.env),
    flags,
    positionals,
    version: VERSION,
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    progress: terminalProgress(process.stderr),
    // A second entry point of the compiled binary (scripts/build.ts).
    workers: {
      checkpointer: new URL("./store/sqlite/checkpointer.ts", import.meta.url),
      scanner: new URL("./store/sqlite/scanner.ts", import.meta.url),
    },
    env: process.env,
    relaunch: (env) => {
      try {
        process.execve?.(process.execPath, [...selfCommand(), ...argv], env);
      } catch {
        // Not run again (the binary gone from its path, say): the command goes on as it is.
      }
    },
  });
}

/** The one line a failure ends with, and its exit code (docs/operations.md#exit-codes). */
function failure(e: unknown): { line: string; code: number } {
  if (e instanceof CliError) return { line: e.message, code: e.code };
  if (e instanceof ConfigError || e instanceof UnsupportedLocationError) return { line: e.message, code: EXIT.usage };
  if (e instanceof DatabaseOpenError) return { line: e.message, code: EXIT.database };
  // Anything else is a bug or a condition not foreseen: still one line, never minified source.
  const err = e instanceof Error ? e : new Error(String(e));
  const code = (err as { code?: unknown }).code;
  return {
    line: `unexpected error: ${err.message}${typeof code === "string" && !err.message.includes(code) ? ` (${code})` : ""}; INSTALLSTATS_DEBUG=1 prints the stack`,
    code: EXIT.failed,
  };
}

try {
  const code = await run(process.argv.slice(2));
  if (code >= 0) process.exit(code);
} catch (e) {
  const { line, code } = failure(e);
  console.error(`installstats: ${line.replaceAll("\n", " ")}`);
  if (process.env.INSTALLSTATS_DEBUG && e instanceof Error && e.stack) console.error(e.stack);
  process.exit(code);
}
