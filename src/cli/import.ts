import { existsSync, readFileSync, statSync } from "node:fs";
import { isTimeZone } from "../domain/time.ts";
import { importRecords } from "../transfer/import-records.ts";
import { ImportFormatError, sniff } from "../transfer/input-format.ts";
import type { LoadSummary } from "../transfer/load-executions.ts";
import { SourceError, importFromApi } from "../transfer/telemetry-service-api.ts";
import { importServiceDump } from "../transfer/telemetry-service-dump.ts";
import { BULK_LOAD, bulkWriter } from "../store/bulk-load.ts";
import { CliError, EXIT } from "./errors.ts";
import { UsageError, countFlag, openDatabaseOf, type Command, type CommandContext } from "./command.ts";

/** Invalid records listed one by one on stderr; past this, only counted. */
const SHOWN_INVALID = 20;

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
const n = (count: number) => count.toLocaleString("en-US");

/** Each refusal on stderr up to SHOWN_INVALID; `more()` says how many were not shown. */
function refusals(ctx: CommandContext) {
  let shown = 0;
  return {
    show(position: string, message: string) {
      if (shown++ < SHOWN_INVALID) {
        ctx.progress("");
        ctx.err(`installstats import: ${position}: ${message}\n`);
      }
    },
    more() {
      if (shown > SHOWN_INVALID)
        ctx.err(
          `installstats import: ${n(shown - SHOWN_INVALID)} more refused not shown (all are in the rejected-reports log: installstats rejected)\n`,
        );
    },
  };
}

/** The summary's common part, in the words of the summary line. */
const loaded = (s: LoadSummary) => ({
  imported: s.imported,
  updated: s.updated,
  already_there: s.alreadyThere,
  rejected_log: { kept: s.rejectedLog.kept, already_there: s.rejectedLog.alreadyThere, no_room: s.rejectedLog.dropped },
});

const refusedTotal = (reasons: Record<string, number>) => Object.values(reasons).reduce((a, b) => a + b, 0);

export const importCommand: Command = {
  name: "import",
  summary:
    "import records: our NDJSON export, the original API's /data/json array, a dump of the community telemetry service's ClickHouse table (FORMAT JSONEachRow or CSVWithNames), or with --url every record a telemetry service (or another installstats) lists at /api/records (- reads stdin)",
  settings: ["db", "dbPasswordFile", "durability", "maxFieldLength", "maxErrorLength", "maskIps"],
  args: "<file|->",
  flags: {
    url: {
      type: "string",
      help: "read GET /api/records of this server (http://host:port) page by page instead of a file; resumes where the last run stopped",
    },
    "from-start": {
      type: "boolean",
      help: "with --url: read from the first record, not from where the last run stopped",
    },
    retries: {
      type: "string",
      help: "with --url: attempts per request before giving up (default 8, about 2 minutes with the waits between them)",
    },
    "token-file": {
      type: "string",
      help: "with --url: a file holding the server's read token (sent as Authorization: Bearer)",
    },
    "time-zone": {
      type: "string",
      help: "time zone of times written without one (ClickHouse's server zone, e.g. Europe/Berlin); default UTC",
    },
  },
  async run(ctx) {
    const { flags, positionals } = ctx;
    const url = typeof flags.url === "string" ? flags.url : undefined;
    const zone = typeof flags["time-zone"] === "string" ? flags["time-zone"] : "UTC";
    if (!isTimeZone(zone))
      throw new UsageError(
        `--time-zone ${JSON.stringify(zone)} is not a time zone; use a name such as UTC or Europe/Berlin (the ClickHouse server's: SELECT timezone())`,
      );
    if (url !== undefined) {
      if (positionals.length > 0)
        throw new UsageError("import takes a file or --url, not both: installstats import --url http://host:port");
      return fromApi(ctx, url, zone);
    }
    if (flags["from-start"] !== undefined || flags["token-file"] !== undefined || flags.retries !== undefined)
      throw new UsageError("--from-start, --retries and --token-file go with --url");
    const [file, ...extra] = positionals;
    if (file === undefined || extra.length > 0)
      throw new UsageError(
        "import takes one argument, a file or - for stdin: installstats import <file|-> (or --url http://host:port)",
      );
    return fromFile(ctx, file, zone);
  },
};

/** Bytes read of the input so far, for progress. */
type Counted = { bytes: number };
type Deps = Parameters<typeof importServiceDump>[0];
type DumpFormat = Parameters<typeof importServiceDump>[2];
type Input = Awaited<ReturnType<typeof sniff>>;

async function fromFile(ctx: CommandContext, file: string, zone: string): Promise<number> {
  if (file !== "-") {
    if (!existsSync(file)) throw new UsageError(`${file} does not exist`);
    if (statSync(file).isDirectory()) throw new UsageError(`${file} is a directory`);
  }
  const name = file === "-" ? "stdin" : file;
  const stream = file === "-" ? Bun.stdin.stream() : Bun.file(file).stream();
  const read: Counted = { bytes: 0 };
  async function* counted(): AsyncGenerator<Uint8Array> {
    for await (const chunk of stream) {
      read.bytes += chunk.byteLength;
      yield chunk;
    }
  }
  let input: Input;
  try {
    input = await sniff(counted());
  } catch (e) {
    if (e instanceof ImportFormatError) throw new UsageError(`${name}: ${e.message}`);
    throw e;
  }
  const engine = await openDatabaseOf(ctx, { create: true, ...BULK_LOAD });
  const { store } = engine;
  const writer = bulkWriter(store);
  const deps: Deps = { reads: store, commit: (ops) => writer.write(ops) };
  try {
    const code =
      input.format === "clickhouse-jsoneachrow" || input.format === "clickhouse-csv"
        ? await fromDump(ctx, deps, input.text, input.format, zone, read)
        : await fromRecords(ctx, deps, input, read);
    await writer.finish(Date.now());
    return code;
  } catch (e) {
    ctx.progress("");
    if (e instanceof ImportFormatError)
      throw new UsageError(`${name}: ${e.message} (records before this point were imported)`);
    throw e;
  } finally {
    await engine.close();
  }
}

/** A dump of the community telemetry service's table. */
async function fromDump(
  ctx: CommandContext,
  deps: Deps,
  text: Input["text"],
  format: DumpFormat,
  zone: string,
  read: Counted,
): Promise<number> {
  const refused = refusals(ctx);
  const phases = { reading: "reading rows", folding: "putting each run together", loading: "loading" };
  const s = await importServiceDump(deps, text, format, {
    normalize: ctx.config,
    zone,
    at: Date.now(),
    onProgress: (p, phase) =>
      ctx.progress(
        `importing (${phases[phase]}): ${n(p.rows)} rows read (${mib(read.bytes)}), ${n(p.executions)} runs, ${n(p.imported)} imported`,
      ),
    onRefused: refused.show,
  });
  ctx.progress("");
  refused.more();
  const summary = {
    format: s.format,
    rows: s.rows,
    duplicate_rows: s.duplicateRows,
    executions: s.executions,
    ...loaded(s),
    refused: refusedTotal(s.refused),
    refused_by_reason: s.refused,
  };
  ctx.out(`${JSON.stringify(summary)}\n`);
  if (s.imported + s.updated > 0) return EXIT.ok;
  const why =
    s.rows === 0
      ? "the input holds no rows"
      : s.executions === 0
        ? `all ${n(s.rows)} rows were refused`
        : `all ${n(s.executions)} runs of its ${n(s.rows)} rows are in the database already`;
  ctx.err(`installstats import: nothing imported: ${why}\n`);
  return EXIT.failed;
}

/** Our NDJSON export, or the original API's /data/json array. */
async function fromRecords(ctx: CommandContext, deps: Deps, input: Input, read: Counted): Promise<number> {
  const refused = refusals(ctx);
  const summary = await importRecords(deps, input.text, {
    normalize: ctx.config,
    onProgress: (s) => ctx.progress(`importing: ${n(s.read)} read, ${n(s.imported)} imported (${mib(read.bytes)})`),
    onInvalid: refused.show,
  });
  ctx.progress("");
  refused.more();
  const { format, read: records, imported, duplicates, invalid } = summary;
  ctx.out(`${JSON.stringify({ format, read: records, imported, duplicates, invalid })}\n`);
  if (imported > 0) return EXIT.ok;
  // Nothing new in the database: a script that imports and then relies on the data must notice.
  const why =
    records === 0
      ? "the input holds no records"
      : duplicates === records
        ? records === 1
          ? "its one record is in the database already"
          : `all ${records} records are in the database already`
        : invalid === records
          ? records === 1
            ? "its one record is invalid"
            : `all ${records} records are invalid`
          : `of ${records} records, ${duplicates} are in the database already and ${invalid} are invalid`;
  ctx.err(`installstats import: nothing imported: ${why}\n`);
  return EXIT.failed;
}

async function fromApi(ctx: CommandContext, url: string, zone: string): Promise<number> {
  const tokenFile = ctx.flags["token-file"];
  let token: string | null = null;
  if (typeof tokenFile === "string") {
    if (!existsSync(tokenFile)) throw new UsageError(`--token-file ${tokenFile} does not exist`);
    token = readFileSync(tokenFile, "utf8").trim();
  }
  const engine = await openDatabaseOf(ctx, { create: true, ...BULK_LOAD });
  const { store } = engine;
  const writer = bulkWriter(store);
  const refused = refusals(ctx);
  try {
    const s = await importFromApi({ reads: store, commit: (ops) => writer.write(ops) }, url, {
      normalize: ctx.config,
      zone,
      at: Date.now(),
      token,
      fromStart: ctx.flags["from-start"] === true,
      attempts: countFlag(ctx, "retries", 8),
      onProgress: (p, total) =>
        ctx.progress(
          `importing from ${p.source}: ${n(p.records)} of about ${n(total)} records read, ${n(p.imported)} imported`,
        ),
      onRefused: refused.show,
      onRetry: (error, waitMs) => {
        ctx.progress("");
        ctx.err(`installstats import: ${error}; trying again in ${(waitMs / 1000).toFixed(1)} s\n`);
      },
    });
    await writer.finish(Date.now());
    ctx.progress("");
    refused.more();
    const summary = {
      format: "telemetry-service-api",
      source: s.source,
      resumed_after: s.resumedAfter,
      requests: s.requests,
      records: s.records,
      relocations: s.relocations,
      ...loaded(s),
      refused: refusedTotal(s.refused),
      refused_by_reason: s.refused,
    };
    ctx.out(`${JSON.stringify(summary)}\n`);
    return EXIT.ok;
  } catch (e) {
    ctx.progress("");
    if (e instanceof SourceError) throw new CliError(e.message, EXIT.failed);
    throw e;
  } finally {
    await engine.close();
  }
}
