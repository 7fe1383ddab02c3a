// The write side of the SQLite engine: every write op applied inside one transaction per batch,
// rollup deltas and error-signature sightings merged into their rows before COMMIT, the open
// hours' counts handed to memory after it. The steps are module functions over the connection's
// WriteContext (write-context.ts): reports in intake.ts, rollup cells and signatures in cells.ts.
import { SignatureSightings } from "../../domain/error-signature.ts";
import type { Rejection } from "../../domain/rejection.ts";
import type { ResultFor, WriteOp, WriteResult } from "../contract/store.ts";
import type { LeavingEntry } from "../common/budgets.ts";
import { count } from "../common/counting.ts";
import { importMarkName } from "../common/marks.ts";
import { OUTCOMES } from "../../domain/outcome.ts";
import { deltasFrom, fold, mergeSightings, recountDay, storeTouched, sumPassedMonths } from "./cells.ts";
import { encodeId } from "./ids.ts";
import {
  applyHeldAlone,
  applyReport,
  keepHeld,
  keepHeldWithinBudget,
  load,
  logRejection,
  forgetHeld,
} from "./intake.ts";
import { createWriteContext, type BatchEffects, type WriteContext } from "./write-context.ts";

type Op<K extends WriteOp["kind"]> = Extract<WriteOp, { kind: K }>;

/** A held report copied from another store: kept as it is unless its execution or a held report of it is stored. */
function loadHeld(ctx: WriteContext, { held }: Op<"load-held">, fx: BatchEffects): ResultFor<Op<"load-held">> {
  const { report, at, repaired } = held;
  if (ctx.reads.getExecution(report.executionId) !== undefined || ctx.hot.findHeld.get({ id: report.executionId }))
    return { kind: "duplicate" };
  keepHeld(ctx, report, at, repaired, fx);
  return { kind: "created" };
}

/** A log entry copied from another store, once (the copy mark of its source), within the log's budget. */
function loadRejected(ctx: WriteContext, { entry, source }: Op<"load-rejected">): ResultFor<Op<"load-rejected">> {
  const { q } = ctx;
  if (entry.id <= (q.copyMark.get({ source })?.id ?? 0)) return { kind: "duplicate" };
  q.setCopyMark.run({ source, id: entry.id });
  const rejection: Rejection = {
    endpoint: entry.endpoint,
    reason: entry.reason,
    field: entry.field,
    message: entry.message,
    randomId: entry.randomId,
    body: entry.body,
  };
  const placed = ctx.log.place(rejection, entry.bodyKept ? null : { size: entry.bodySize, hash: entry.bodySha256 });
  if (!placed) return { kind: "dropped" };
  q.insertRejected.run({
    id: null,
    receivedAt: entry.receivedAt,
    ...rejection,
    result: entry.result,
    ...placed,
    replayedAt: entry.replayedAt,
    replayResult: entry.replayResult,
  });
  return { kind: "created", bodyKept: placed.bodyStore !== "head" || placed.body.byteLength >= placed.bodySize };
}

/** Removes an install: its executions (their counts taken out), held reports, log entries and relay entries. */
function deleteInstall(ctx: WriteContext, { randomId, at }: Op<"delete">, fx: BatchEffects): ResultFor<Op<"delete">> {
  const records = ctx.reads.getExecutions(randomId);
  if (records.length > 0) ctx.hot.deleteExecutions.run(encodeId(randomId));
  for (const record of records) count(fx, record, -1, at);
  const held = ctx.q.deleteHeldReturning.all({ id: randomId });
  forgetHeld(ctx, held);
  const logged = ctx.q.deleteRejectedOf.all({ id: randomId });
  ctx.log.release(logged);
  // The install's reports waiting to be relayed go too: its executions', and its held reports'.
  ctx.relay.forget([...records.map((r) => r.executionId), ...held.map((h) => h.executionId)]);
  return {
    kind: "deleted",
    found: records.length > 0 || held.length > 0 || logged.length > 0,
    executions: records.length,
  };
}

/** An execution still in progress becomes of unknown outcome as of `at`. */
function expire(ctx: WriteContext, { executionId, at }: Op<"expire">, fx: BatchEffects): ResultFor<Op<"expire">> {
  const record = ctx.reads.getExecution(executionId);
  if (!record || record.outcome !== "in_progress") return { kind: "expired", changed: false };
  ctx.hot.setOutcome.run({ id: encodeId(executionId), code: OUTCOMES.indexOf("unknown"), at });
  count(fx, record, -1, at);
  count(fx, { ...record, outcome: "unknown", updatedAt: at }, 1, at);
  return { kind: "expired", changed: true };
}

/** Held reports received before `before`, oldest first, applied on their own. */
function expireHeld(
  ctx: WriteContext,
  { before, limit }: Op<"expire-held">,
  fx: BatchEffects,
): ResultFor<Op<"expire-held">> {
  const due = ctx.hot.oldestHeld.all({ before, limit });
  for (const row of due) applyHeldAlone(ctx, row, fx);
  ctx.counters.add("held.expired_total", due.length);
  return { kind: "expired-held", count: due.length };
}

function forgetRejected(ctx: WriteContext, { before }: Op<"forget-rejected">): ResultFor<Op<"forget-rejected">> {
  const gone: LeavingEntry[] = ctx.q.forgetRejected.all({ before });
  ctx.log.release(gone);
  return { kind: "forgotten", count: gone.length };
}

function apply(ctx: WriteContext, op: WriteOp, fx: BatchEffects): WriteResult {
  // Only reports keep the runs in flight true as they write them; anything else may write executions.
  if (op.kind !== "report" && op.kind !== "reject") ctx.inFlight.clear();
  switch (op.kind) {
    case "report":
      return applyReport(ctx, op, fx);
    case "reject":
      logRejection(ctx, op.rejection, op.at, null, op.headOnly);
      return { kind: "logged" };
    case "load":
      return load(ctx, op.execution, fx);
    case "load-held":
      return loadHeld(ctx, op, fx);
    case "load-rejected":
      return loadRejected(ctx, op);
    case "delete":
      return deleteInstall(ctx, op, fx);
    case "expire":
      return expire(ctx, op, fx);
    case "forget-rejected":
      return forgetRejected(ctx, op);
    case "drop-before":
      // One file, no periods: retention deletes installs one by one (maintenance/prune.ts).
      return { kind: "dropped", executions: 0, until: null };
    case "expire-held":
      return expireHeld(ctx, op, fx);
    case "stuck-checked":
      ctx.q.moveStuckMark.run({ from: op.from, until: op.until });
      ctx.stuckMark = null; // compare-and-set: read again when needed
      return { kind: "marked" };
    case "import-mark":
      ctx.q.setCopyMark.run({ source: importMarkName(op.source), id: op.position });
      return { kind: "marked" };
    case "mark-replayed":
      ctx.q.markReplayed.run({ id: op.rejectedId, at: op.at, result: op.result });
      return { kind: "marked" };
    case "fold":
      return fold(ctx, op, fx);
    case "alert-round":
      return ctx.alerts.round(op);
    case "alert-silence":
      return ctx.alerts.silence(op);
    case "alert-delivery":
      return ctx.alerts.delivery(op);
    case "alert-forget":
      return ctx.alerts.forget(op);
    case "relay-claim":
      return ctx.relay.claim(op);
    case "relay-settle":
      return ctx.relay.settle(op);
    case "relay-control":
      return ctx.relay.control(op);
    case "issue-claim":
      return ctx.issues.claim(op);
    case "issue-settle":
      return ctx.issues.settle(op);
    case "issue-forget":
      return ctx.issues.forget(op);
  }
}

/** Applies `ops` in order inside the caller's transaction; the results, and what the batch changes in memory after COMMIT. */
function runBatch(ctx: WriteContext, ops: readonly WriteOp[]): { results: WriteResult[]; fx: BatchEffects } {
  ctx.touched.clear();
  const fx: BatchEffects = {
    deltas: deltasFrom(ctx, ctx.openHours.foldedUntil),
    sightings: new SignatureSightings(),
    open: [],
    foldedTo: null,
    held: false,
  };
  ctx.counters.reset();
  ctx.stuckMark = null;
  const results = ops.map((op) => apply(ctx, op, fx));
  if (fx.held) keepHeldWithinBudget(ctx, fx);
  ctx.relay.trim(ops.reduce((at, op) => Math.max(at, op.at), 0));
  ctx.counters.flush();
  sumPassedMonths(ctx, storeTouched(ctx));
  fx.open.push(fx.deltas);
  mergeSightings(ctx, fx.sightings);
  return { results, fx };
}

/** The write side of one connection (store.ts): the context made once, a transaction per batch. */
export function createSqliteWrites(...args: Parameters<typeof createWriteContext>) {
  const ctx = createWriteContext(...args);
  const { sqlite, openHours, oldHours, counters, labels, relay, months, inFlight } = ctx;
  const writeBatch = sqlite.transaction((ops: readonly WriteOp[]) => runBatch(ctx, ops));
  const rebuildDay = sqlite.transaction((day: number, end: number) => recountDay(ctx, day, end));

  return {
    /** The budgets' counters as committed. */
    counters: () => counters.all(),
    /** The relay's outbox as committed. */
    relayStatus: () => relay.status(),
    /** One transaction; after COMMIT, folded hours leave memory and the open-hour counts join it. */
    write(ops: readonly WriteOp[]): WriteResult[] {
      let batch: { results: WriteResult[]; fx: BatchEffects };
      const monthsFrom = months.from;
      try {
        batch = writeBatch.immediate(ops);
      } catch (e) {
        inFlight.clear(); // it may hold rows that were rolled back
        oldHours.clear();
        labels.rollback();
        counters.reset();
        months.from = monthsFrom;
        throw e;
      }
      labels.commit();
      const { results, fx } = batch;
      if (fx.foldedTo !== null) openHours.folded(fx.foldedTo);
      for (const d of fx.open) openHours.apply(d.open);
      return results;
    },

    /** Recounts the folded part of one day from its records into the stored cells (rebuild). */
    rebuildDay(day: number, end: number): void {
      try {
        rebuildDay.immediate(day, end);
      } catch (e) {
        labels.rollback();
        throw e;
      }
      labels.commit();
    },
  };
}
