#!/usr/bin/env bun
// CLI entry: `installstats <command> [flags]`.
import pkg from "../package.json" with { type: "json" };
import { ConfigError, configHelp, parseCommandLine, type Config } from "./config.ts";
import { createApp } from "./app.ts";
import { createWriter } from "./ingest/writer.ts";
import { createSqliteReads } from "./store/sqlite-reads.ts";
import { startWriteThread } from "./store/worker-commit.ts";
import { createLogger } from "./ops/log.ts";
import { DatabaseOpenError, openDatabase } from "./store/database.ts";
import { createSqliteStore } from "./store/sqlite-store.ts";
import { listRejected } from "./store/rejected-log.ts";
import { verifyRollups } from "./report/verify.ts";
import { rejectedReports, type RejectReason } from "./store/schema.ts";

const VERSION = pkg.version;

const USAGE = `installstats ${VERSION}: self-hosted installation telemetry

Usage: installstats <command> [options]

Commands:
  serve      run the HTTP service (default)
  migrate    apply pending database migrations and exit
  verify     check database integrity and that every rollup equals a recount of the records
  rejected   list the rejected-reports log as NDJSON, newest first
             [--limit N (default 100)] [--reason invalid_json|invalid_field|already_final|repaired|payload_too_large]

Options (every command):
${configHelp()}
  -h, --help     show help
  -v, --version  print the version

Flags win over INSTALLSTATS_* environment variables, which win over defaults.`;

class UsageError extends Error {}

function openStore(config: Config) {
  const { sqlite, db } = openDatabase(config.db, { durability: config.durability, migrate: true });
  return createSqliteStore(sqlite, db);
}

async function serve(config: Config): Promise<void> {
  const clock = Date.now;
  const log = createLogger(config.logLevel, (line) => process.stderr.write(line), clock);
  // This thread applies migrations and serves reads; the write thread owns the only writer.
  const { sqlite, db } = openDatabase(config.db, { durability: config.durability, migrate: true });
  const thread = await startWriteThread(new URL("./store/write-worker.ts", import.meta.url), config.db, config.durability, (e) => {
    log.error("write thread crashed; exiting so the supervisor restarts the service", { error: e.message });
    process.exit(1);
  });
  const writer = createWriter(thread.commit, config.maxBatch);
  const app = createApp({ config, store: createSqliteReads(sqlite, db), writer, clock, version: VERSION, log });
  app.listen({ hostname: config.host, port: config.port });
  const port = app.server?.port;
  // The one line on stdout: scripts and tests read the address from it.
  process.stdout.write(`installstats ${VERSION} listening on http://${config.host}:${port}\n`);
  log.info("listening", { host: config.host, port, db: config.db, durability: config.durability });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    await app.stop(); // stop accepting; in-flight requests finish
    await writer.drain(); // everything acknowledged or queued is committed
    await thread.close();
    sqlite.close();
    log.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

function printRejected(config: Config, flags: Record<string, string | boolean | undefined>): void {
  const limit = flags.limit === undefined ? 100 : Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError("--limit must be a positive whole number");
  const reasons: readonly string[] = rejectedReports.reason.enumValues;
  const reason = flags.reason;
  if (reason !== undefined && (typeof reason !== "string" || !reasons.includes(reason))) {
    throw new UsageError(`--reason must be one of ${reasons.join(", ")}`);
  }
  const { sqlite, db } = openDatabase(config.db, { durability: config.durability, migrate: true });
  for (const entry of listRejected(db, { limit, reason: reason as RejectReason | undefined })) {
    process.stdout.write(`${JSON.stringify(entry)}\n`);
  }
  sqlite.close();
}

function verify(config: Config): number {
  const { sqlite, db } = openDatabase(config.db, { durability: config.durability, migrate: true });
  const integrity = (sqlite.query("PRAGMA integrity_check").all() as { integrity_check: string }[]).map((r) => r.integrity_check);
  const progress = process.stderr.isTTY
    ? (day: number, end: number) => process.stderr.write(`\rverifying ${new Date(day).toISOString().slice(0, 10)} (until ${new Date(end).toISOString().slice(0, 10)})`)
    : undefined;
  const rollups = verifyRollups(createSqliteStore(sqlite, db), progress);
  if (progress) process.stderr.write("\n");
  sqlite.close();
  const ok = integrity.length === 1 && integrity[0] === "ok" && rollups.ok;
  console.log(JSON.stringify({ ok, integrity, rollups }, null, 2));
  return ok ? 0 : 1;
}

async function run(argv: string[]): Promise<number> {
  const first = argv[0];
  if (first === "-v" || first === "--version" || first === "version") {
    console.log(VERSION);
    return 0;
  }
  const command = first === undefined || first.startsWith("-") ? "serve" : first;
  const rest = command === first ? argv.slice(1) : argv;
  if (command === "help" || (command === "serve" && (rest.includes("-h") || rest.includes("--help")))) {
    console.log(USAGE);
    return 0;
  }
  const { config, flags } = parseCommandLine(rest, process.env, {
    limit: { type: "string" },
    reason: { type: "string" },
  });
  if (flags.help) {
    console.log(USAGE);
    return 0;
  }
  switch (command) {
    case "serve":
      await serve(config);
      return -1; // keeps running
    case "migrate":
      openStore(config).close();
      console.log(`${config.db}: migrations applied`);
      return 0;
    case "rejected":
      printRejected(config, flags);
      return 0;
    case "verify":
      return verify(config);
    default:
      throw new UsageError(`unknown command "${command}"; see installstats --help`);
  }
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
