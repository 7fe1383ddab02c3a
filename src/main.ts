#!/usr/bin/env bun
// CLI entry: `installstats <command> [options]`; each command lives in src/cli/.
import { parseArgs } from "node:util";
import pkg from "../package.json" with { type: "json" };
import { ConfigError, configFlags, configHelp, loadConfig } from "./config.ts";
import { UsageError, terminalProgress, type Command } from "./cli/command.ts";
import { backup } from "./cli/backup.ts";
import { exportCommand } from "./cli/export.ts";
import { importCommand } from "./cli/import.ts";
import { migrate } from "./cli/migrate.ts";
import { prune } from "./cli/prune.ts";
import { rejected } from "./cli/rejected.ts";
import { replay } from "./cli/replay.ts";
import { restore } from "./cli/restore.ts";
import { seed } from "./cli/seed.ts";
import { serve } from "./cli/serve.ts";
import { verify } from "./cli/verify.ts";
import { DatabaseOpenError } from "./store/engine.ts";

const VERSION = pkg.version;
const COMMANDS: readonly Command[] = [serve, migrate, verify, rejected, seed, backup, restore, exportCommand, importCommand, prune, replay];

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return `installstats ${VERSION}: self-hosted installation telemetry

Usage: installstats <command> [options]        (no command: serve)

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)} ${c.summary}`).join("\n")}

Run "installstats <command> --help" for a command's own options.

Options (every command):
${configHelp()}
  -h, --help     show help
  -v, --version  print the version

Flags win over INSTALLSTATS_* environment variables, which win over defaults.`;
}

function commandHelp(c: Command): string {
  const own = Object.entries(c.flags ?? {});
  const width = Math.max(0, ...own.map(([name]) => name.length)) + 2;
  return `installstats ${c.name}${c.args ? ` ${c.args}` : ""} [options]: ${c.summary}
${own.length > 0 ? `\nOptions of ${c.name}:\n${own.map(([name, f]) => `  --${name.padEnd(width)} ${f.help}`).join("\n")}\n` : ""}
Options (every command):
${configHelp()}
  -h, --help     show this help`;
}

async function run(argv: string[]): Promise<number> {
  const first = argv[0];
  if (first === "-v" || first === "--version" || first === "version") {
    console.log(VERSION);
    return 0;
  }
  if (first === "help" || ((first === "-h" || first === "--help") && argv.length === 1)) {
    console.log(overview());
    return 0;
  }
  const named = first !== undefined && !first.startsWith("-");
  const command = named ? COMMANDS.find((c) => c.name === first) : serve;
  if (!command) throw new UsageError(`unknown command "${first}"; see installstats --help`);
  const own = Object.fromEntries(Object.entries(command.flags ?? {}).map(([name, f]) => [name, f.short ? { type: f.type, short: f.short } : { type: f.type }]));
  const { values, positionals } = parseArgs({
    args: named ? argv.slice(1) : argv,
    options: { ...configFlags, ...own, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
    strict: true,
  });
  const flags = values as Record<string, string | boolean | undefined>;
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
    workers: { checkpointer: new URL("./store/sqlite/checkpointer.ts", import.meta.url) },
  });
}

try {
  const code = await run(process.argv.slice(2));
  if (code >= 0) process.exit(code);
} catch (e) {
  if (e instanceof DatabaseOpenError) {
    console.error(`installstats: ${e.message}`);
    process.exit(3);
  }
  if (e instanceof ConfigError || e instanceof UsageError || (e instanceof TypeError && "code" in e && String(e.code).startsWith("ERR_PARSE_ARGS"))) {
    console.error(`installstats: ${e.message}`);
    process.exit(2);
  }
  throw e;
}
