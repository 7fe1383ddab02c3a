// Where an import's executions and refusals go: through the one write path, in batches. An
// execution not stored yet is loaded whole (counted once) with its attempt number among its
// install's executions by start time; one stored while still in progress that the import knows
// the end of gets that end as its final report (or the timeout, as the stuck-install job would);
// anything else is there already, so an import run again changes nothing. A refused row or record
// goes into the rejected-reports log once however often it is imported: its entry is marked by
// the SHA-256 of its body (a copy mark, as `installstats copy` keeps one per source).
import { descriptiveOf, type Execution, type Report } from "../domain/execution.ts";
import { deriveOutcome } from "../domain/outcome.ts";
import type { RejectReason } from "../domain/rejection.ts";
import type { StoreReads } from "../store/contract/executions.ts";
import type { RejectedEntry } from "../store/contract/rejected.ts";
import type { WriteOp, WriteResult } from "../store/contract/store.ts";
import type { Commit } from "../store/writer.ts";

/** What an import did with what it read. */
export interface LoadSummary {
  /** Executions stored by this import. */
  imported: number;
  /** Executions stored in progress before that the import brought to their end. */
  updated: number;
  /** Executions stored already (as far as the import knows them): left as they are. */
  alreadyThere: number;
  /** Refused rows or records whose entry went into the rejected-reports log now, was there from an earlier run, or found no room. */
  rejectedLog: { kept: number; alreadyThere: number; dropped: number };
}

export interface Refused {
  reason: Extract<RejectReason, "invalid_json" | "invalid_field" | "already_final">;
  field: string | null;
  message: string;
  randomId: string | null;
  /** What was refused, as JSON text (a row of the dump, a record of the listing). */
  body: string;
}

const EMPTY = new Uint8Array(0);

/** The final report that ends a stored execution as `e` ended (its fields as the import read them). */
function finalReport(e: Execution): Report {
  const {
    executionId,
    randomId,
    payloadVersion,
    status,
    outcome,
    error,
    exitCode,
    errorCategory,
    failedCommand,
    failedLine,
    installDuration,
  } = e;
  return {
    executionId,
    randomId,
    payloadVersion,
    fields: descriptiveOf(e),
    status,
    outcome,
    error,
    exitCode,
    errorCategory,
    failedCommand,
    failedLine,
    installDuration,
  };
}

/** Still open to its final status: in progress, or timed out with a progress status (lifecycle.ts). */
const open = (e: Execution): boolean => deriveOutcome(e.status, null) === "in_progress";

const sha256 = (bytes: Uint8Array): string => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

export class ExecutionLoader {
  readonly summary: LoadSummary = {
    imported: 0,
    updated: 0,
    alreadyThere: 0,
    rejectedLog: { kept: 0, alreadyThere: 0, dropped: 0 },
  };
  private ops: WriteOp[] = [];
  /** Each install's executions as stored, and as this batch adds them, for attempt numbers. */
  private installs = new Map<string, Execution[]>();

  constructor(
    private readonly deps: { reads: StoreReads; commit: Commit },
    private readonly opts: { at: number; batchOps?: number },
  ) {}

  /** Ops waiting for the next commit. */
  get pending(): number {
    return this.ops.length;
  }

  private async executionsOf(randomId: string): Promise<Execution[]> {
    let known = this.installs.get(randomId);
    if (!known) this.installs.set(randomId, (known = await this.deps.reads.getExecutions(randomId)));
    return known;
  }

  /** Loads `e` (its attempt number set here), brings a stored one to its end, or counts it as there. */
  async add(e: Execution): Promise<void> {
    const known = await this.executionsOf(e.randomId);
    const stored = known.find((k) => k.executionId === e.executionId);
    if (stored === undefined) {
      const before = known.filter(
        (k) => k.createdAt < e.createdAt || (k.createdAt === e.createdAt && k.executionId < e.executionId),
      ).length;
      const execution = { ...e, attempt: before + 1 };
      known.push(execution);
      this.ops.push({ kind: "load", execution, at: execution.updatedAt });
    } else if (open(stored) && e.finishedAt !== null) {
      // It ended (a run timed out here still takes its late end, as ingestion gives it).
      this.ops.push({
        kind: "report",
        report: finalReport(e),
        endpoint: "telemetry",
        raw: EMPTY,
        repairs: [],
        at: e.finishedAt,
      });
      known[known.indexOf(stored)] = { ...stored, status: e.status, outcome: e.outcome };
    } else if (stored.outcome === "in_progress" && e.outcome === "unknown") {
      // It timed out at the source.
      this.ops.push({ kind: "expire", executionId: e.executionId, at: e.updatedAt });
      known[known.indexOf(stored)] = { ...stored, outcome: e.outcome };
    } else {
      this.summary.alreadyThere++;
    }
    if (this.ops.length >= (this.opts.batchOps ?? 1000)) await this.flush();
  }

  /** Keeps a refused row or record in the rejected-reports log (once, whatever the runs). */
  async refuse(r: Refused): Promise<void> {
    const body = new TextEncoder().encode(r.body);
    const hash = sha256(body);
    const entry: RejectedEntry = {
      id: 1,
      receivedAt: this.opts.at,
      endpoint: "telemetry",
      reason: r.reason,
      field: r.field,
      message: r.message,
      randomId: r.randomId,
      body,
      result: null,
      replayedAt: null,
      replayResult: null,
      bodySize: body.byteLength,
      bodySha256: hash,
      bodyKept: true,
    };
    this.ops.push({ kind: "load-rejected", entry, source: `import-refused:${hash}`, at: this.opts.at });
    if (this.ops.length >= (this.opts.batchOps ?? 1000)) await this.flush();
  }

  /** Commits what is pending in one transaction, `extra` last (the listing's position). */
  async flush(extra: readonly WriteOp[] = []): Promise<void> {
    const ops = [...this.ops, ...extra];
    this.ops = [];
    this.installs.clear();
    if (ops.length === 0) return;
    const results = await this.deps.commit(ops);
    ops.forEach((op, i) => this.count(op, results[i]!));
  }

  private count(op: WriteOp, result: WriteResult): void {
    const s = this.summary;
    if (op.kind === "load") {
      if (result.kind === "created") s.imported++;
      else s.alreadyThere++; // stored meanwhile by someone else
    } else if (op.kind === "report" || op.kind === "expire") {
      if (result.kind === "updated" || (result.kind === "expired" && result.changed)) s.updated++;
      else s.alreadyThere++;
    } else if (op.kind === "load-rejected") {
      if (result.kind === "created") s.rejectedLog.kept++;
      else if (result.kind === "duplicate") s.rejectedLog.alreadyThere++;
      else s.rejectedLog.dropped++;
    }
  }
}
