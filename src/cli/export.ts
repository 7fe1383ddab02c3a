import { existsSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { exportExecutions } from "../transfer/export-executions.ts";
import type { ExportFormat } from "../read/export.ts";
import { DEFAULT_EXPORT_FORMAT } from "../read/native/export-routes.ts";
import { QueryError, type FilterQuery } from "../read/query.ts";
import { OUTCOMES, type Outcome } from "../domain/outcome.ts";
import { UsageError, openDatabaseOf, type Command, type Flag } from "./command.ts";

const isOutcome = (text: string): text is Outcome => (OUTCOMES as readonly string[]).includes(text);

/** Flag name -> FilterQuery key, for the exact-match filters (as GET /api/export takes them). */
const LABELS = {
  nsapp: "nsapp",
  status: "status",
  type: "type",
  "os-type": "os_type",
  "os-version": "os_version",
  "pve-version": "pve_version",
  method: "method",
} as const;

const filterFlags: Record<string, Flag> = {
  nsapp: { type: "string", help: "application name" },
  status: { type: "string", help: "status as stored (lowercase), e.g. done, failed, installing" },
  outcome: { type: "string", help: OUTCOMES.join(" | ") },
  type: { type: "string", help: "lxc, vm, turnkey, pve, addon, tool" },
  "os-type": { type: "string", help: "e.g. debian" },
  "os-version": { type: "string", help: "e.g. 12" },
  "pve-version": { type: "string", help: 'host version, e.g. 8.2.2 or "not found"' },
  method: { type: "string", help: "installation method" },
  from: { type: "string", help: "window start, ISO 8601 date or date-time (UTC unless a zone is given)" },
  to: { type: "string", help: "window end, exclusive; a date alone means through the end of that day" },
  days: { type: "string", help: "the last N days up to now (instead of --from/--to)" },
  q: { type: "string", help: "free text, matched in app name and error text" },
};

/** The flags as the query GET /api/export would get, checked by the same rules as its schema. */
function filterQueryFromFlags(flags: Record<string, string | boolean | undefined>): FilterQuery {
  const query: FilterQuery = {};
  const text = (name: string, max: number): string | undefined => {
    const v = flags[name];
    if (v === undefined) return undefined;
    if (typeof v !== "string" || v.length < 1 || v.length > max)
      throw new UsageError(`--${name} must be 1 to ${max} characters`);
    return v;
  };
  for (const [flag, key] of Object.entries(LABELS)) {
    const v = text(flag, 128);
    if (v !== undefined) query[key] = v;
  }
  const outcome = text("outcome", 32);
  if (outcome !== undefined) {
    if (!isOutcome(outcome)) throw new UsageError(`--outcome must be one of ${OUTCOMES.join(", ")}`);
    query.outcome = outcome;
  }
  const from = text("from", 64);
  if (from !== undefined) query.from = from;
  const to = text("to", 64);
  if (to !== undefined) query.to = to;
  const days = text("days", 16);
  if (days !== undefined) {
    const n = Number(days);
    if (!Number.isFinite(n) || n < 1 || n > 3660) throw new UsageError("--days must be a number from 1 to 3660");
    query.days = n;
  }
  const q = text("q", 200);
  if (q !== undefined) query.q = q;
  return query;
}

/** Writes to stdout one chunk at a time, waiting until each is taken (a slow reader slows the export). */
function stdoutSink(chunk: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(chunk, (error) => (error ? reject(error) : resolve()));
  });
}

export const exportCommand: Command = {
  name: "export",
  summary: "export installs as CSV or NDJSON, as GET /api/export does (stdout unless --out)",
  settings: ["db", "dbPasswordFile"],
  flags: {
    format: { type: "string", help: `csv (default; for spreadsheets) | ndjson (lossless; what import reads)` },
    out: { type: "string", help: "write to this file instead of stdout (replaced when the export is complete)" },
    ...filterFlags,
  },
  async run(ctx) {
    const format = (ctx.flags.format ?? DEFAULT_EXPORT_FORMAT) as ExportFormat;
    if (format !== "csv" && format !== "ndjson") throw new UsageError("--format must be csv or ndjson");
    if (ctx.positionals.length > 0)
      throw new UsageError("export takes no arguments; filters are flags, e.g. --nsapp jellyfin --days 30");
    const query = filterQueryFromFlags(ctx.flags);
    const out = ctx.flags.out;
    if (out !== undefined && (typeof out !== "string" || out === "")) throw new UsageError("--out needs a file name");
    if (out !== undefined && !existsSync(dirname(out)))
      throw new UsageError(`directory ${dirname(out)} does not exist`);
    const engine = await openDatabaseOf(ctx, { create: false });
    const temp = out === undefined ? null : join(dirname(out), `.${basename(out)}.export-${process.pid}.tmp`);
    const file = temp === null ? null : await open(temp, "w");
    try {
      const sink = file === null ? stdoutSink : async (chunk: Uint8Array) => void (await file.write(chunk));
      const onRows =
        file === null ? undefined : (n: number) => ctx.progress(`exporting: ${n.toLocaleString()} records`);
      const { records } = await exportExecutions(engine.store, query, format, sink, { onRows });
      if (file !== null && temp !== null && out !== undefined) {
        await file.sync();
        await file.close();
        await rename(temp, out);
        ctx.progress("");
        ctx.err(`installstats export: ${records} records written to ${out}\n`);
      }
      return 0;
    } catch (e) {
      ctx.progress("");
      if (e instanceof QueryError) throw new UsageError(`--${e.field.replace("_", "-")}: ${e.message}`);
      if ((e as NodeJS.ErrnoException).code === "EPIPE") return 0; // the reader went away (| head): not an error
      throw e;
    } finally {
      if (file !== null && temp !== null) {
        await file.close().catch(() => {});
        await rm(temp, { force: true });
      }
      await engine.close();
    }
  },
};
