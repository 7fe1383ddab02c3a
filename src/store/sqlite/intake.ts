// What ingestion writes on SQLite (reports, loads, refusals), one op at a time inside the batch's
// transaction (writes.ts): the domain decides against the stored execution, and the change, its
// counts, its held report and its relay entry are written in place.
import type { Execution, Report } from "../../domain/execution.ts";
import { decide, executionFromHeld, type HeldReport } from "../../domain/lifecycle.ts";
import type { Endpoint, Rejection } from "../../domain/rejection.ts";
import type { ReportWrite } from "../contract/executions.ts";
import type { ResultFor, WriteOp, WriteResult } from "../contract/store.ts";
import { encodeHeld } from "../common/budgets.ts";
import { count, recount } from "../common/counting.ts";
import { heldOf, sameKeys, type BatchEffects, type HeldRow, type WriteContext } from "./write-context.ts";

/** Held reports applied on their own per statement while the held budget is exceeded. */
const OVERFLOW_CHUNK = 64;

/**
 * Logs `r` (a refusal or a repair) within the log's budget (budgets.ts): whole, head only, or
 * counted only; `headOnly`: its body's head only, with the whole body's size and hash.
 */
export function logRejection(
  ctx: WriteContext,
  r: Rejection,
  at: number,
  result: string | null,
  headOnly = false,
): void {
  const placed = ctx.log.place(r, headOnly ? { size: r.body.byteLength, hash: null } : null);
  if (placed)
    ctx.q.insertRejected.run({
      id: null,
      receivedAt: at,
      ...r,
      result,
      ...placed,
      replayedAt: null,
      replayResult: null,
    });
}

/** Held reports removed: their costs leave the held budget. */
export function forgetHeld(ctx: WriteContext, costs: readonly { cost: number }[]): void {
  for (const { cost } of costs) {
    ctx.counters.add("held.bytes", -cost);
    ctx.counters.add("held.count", -1);
  }
}

/** Keeps `report` held (its start report has not come yet), within the held budget's counts. */
export function keepHeld(ctx: WriteContext, report: Report, at: number, repaired: boolean, fx: BatchEffects): void {
  const columns = encodeHeld(report);
  ctx.q.insertHeld.run({
    executionId: report.executionId,
    randomId: report.randomId,
    receivedAt: at,
    repaired,
    ...columns,
  });
  ctx.counters.add("held.bytes", columns.cost);
  ctx.counters.add("held.count", 1);
  fx.held = true;
}

/**
 * A held report becomes the execution it describes, without its start report (it waited too
 * long, or held reports are past their budget): nothing acknowledged is dropped.
 */
export function applyHeldAlone(ctx: WriteContext, row: HeldRow, fx: BatchEffects): void {
  forgetHeld(ctx, ctx.q.deleteHeld.all({ id: row.executionId }));
  if (ctx.reads.getExecution(row.executionId) !== undefined) return; // applied meanwhile
  const held = heldOf(row);
  const execution = executionFromHeld(held, ctx.reads.attemptsOf(held.report.randomId) + 1);
  ctx.hot.insertExecution.run(execution);
  keepStuckMark(ctx, execution);
  count(fx, execution, 1, held.at);
  ctx.relay.releaseAlone(execution.executionId, execution);
}

/** Past the held budget, the oldest held reports are applied on their own until it fits again. */
export function keepHeldWithinBudget(ctx: WriteContext, fx: BatchEffects): void {
  const { counters, limits } = ctx;
  while (counters.get("held.count") > 0 && counters.get("held.bytes") > limits.current.heldBytes) {
    const oldest = ctx.hot.oldestHeld.all({ before: Number.MAX_SAFE_INTEGER, limit: OVERFLOW_CHUNK });
    if (oldest.length === 0) return;
    for (const row of oldest) {
      if (counters.get("held.bytes") <= limits.current.heldBytes) return;
      applyHeldAlone(ctx, row, fx);
      counters.add("held.overflowed_total", 1);
    }
  }
}

/**
 * A repaired body is applied and kept raw in the log, with what its write came to; a duplicate
 * changed nothing and is not logged, repaired or not (docs/decisions/2026-11-21-ingestion.md).
 */
function logRepair(
  ctx: WriteContext,
  op: Extract<ReportWrite, { raw: Uint8Array }>,
  result: WriteResult,
  randomId: string,
): void {
  if (op.repairs.length === 0 || result.kind === "duplicate") return;
  logRejection(
    ctx,
    {
      endpoint: op.endpoint,
      reason: "repaired",
      field: null,
      message: `body repaired (${op.repairs.join(", ")}) and ${result.kind}`,
      randomId,
      body: op.raw,
    },
    op.at,
    result.kind,
    op.headOnly,
  );
}

function heldFor(ctx: WriteContext, executionId: string): HeldReport | null {
  const held = ctx.hot.findHeld.get({ id: executionId });
  return held ? heldOf(held) : null;
}

/**
 * An execution in progress created before the stuck mark (import, replay at a report's own
 * time, a held report applied late) lowers it, or the stuck job would never look at it again
 * ("every execution created before the mark is final or was expired").
 */
function keepStuckMark(ctx: WriteContext, execution: Execution): void {
  if (execution.outcome !== "in_progress") return;
  // Read once per batch: inside the transaction only this batch moves it (below and stuck-checked).
  ctx.stuckMark ??= ctx.q.stuckMark.get()?.t ?? 0;
  if (execution.createdAt >= ctx.stuckMark) return;
  ctx.q.lowerStuckMark.run({ to: execution.createdAt });
  ctx.stuckMark = execution.createdAt;
}

/**
 * `row` was just written by a report from `endpoint`: kept as the run in flight it is, or forgotten.
 * Only today's clients' runs are kept: they report four times, one report after another, where the
 * old clients send a start and a final one, and the start alone of a run they never finish; rows
 * kept until they are pushed out cost more (the collector's work on them) than the lookup saves.
 */
function wrote(ctx: WriteContext, row: Execution, endpoint: Endpoint): void {
  if (row.outcome === "in_progress" && endpoint === "telemetry") ctx.inFlight.set(row.executionId, row);
  else ctx.inFlight.delete(row.executionId);
}

/** One report against its stored execution: created, updated, held, a duplicate, or refused as already final. */
export function applyReport(
  ctx: WriteContext,
  op: Extract<WriteOp, { kind: "report" }>,
  fx: BatchEffects,
): ResultFor<typeof op> {
  const { reads, hot, relay, inFlight } = ctx;
  const { report } = op;
  const current = inFlight.get(report.executionId) ?? reads.getExecution(report.executionId);
  // The held reports' count is read once per batch (budgets): with none held, nothing to look up.
  const held = current === undefined && ctx.counters.get("held.count") > 0 ? heldFor(ctx, report.executionId) : null;
  const repaired = op.repairs.length > 0;
  const attempt =
    current === undefined
      ? reads.attemptsOf(report.randomId, report.executionId === report.randomId) + 1
      : current.attempt;
  const decided = decide(current, report, { at: op.at, attempt, held, repaired });
  // Not held (its client's share is used up): applied on its own now, as it would be when it expired.
  const decision =
    decided.kind === "hold" && op.holdable === false
      ? { kind: "insert" as const, row: executionFromHeld({ report, at: op.at, repaired }, attempt) }
      : decided;
  let result: ResultFor<typeof op>;
  switch (decision.kind) {
    case "insert":
      hot.insertExecution.run(decision.row);
      wrote(ctx, decision.row, op.endpoint);
      keepStuckMark(ctx, decision.row);
      count(fx, decision.row, 1, op.at);
      relay.queue(report, decision.row, op.at);
      if (held) {
        forgetHeld(ctx, ctx.q.deleteHeld.all({ id: report.executionId }));
        relay.releaseAfterStart(report.executionId, decision.row);
      }
      result = { kind: "created", outcome: decision.row.outcome };
      break;
    case "update":
      (sameKeys(current!, decision.row) ? hot.updateExecution : hot.replaceExecution).run(decision.row);
      wrote(ctx, decision.row, op.endpoint);
      recount(fx, current!, decision.row, op.at);
      relay.queue(report, decision.row, op.at);
      result = { kind: "updated", outcome: decision.row.outcome };
      break;
    case "duplicate":
      // The status stands; a gap filled (a start's time after a ping, fields a ping lacked) is
      // written and recounted, and relayed: the upstream has not seen that report either.
      if (decision.row) {
        (sameKeys(current!, decision.row) ? hot.updateExecution : hot.replaceExecution).run(decision.row);
        wrote(ctx, decision.row, op.endpoint);
        recount(fx, current!, decision.row, op.at);
        relay.queue(report, decision.row, op.at);
      }
      if (decision.conflict) {
        logRejection(
          ctx,
          {
            endpoint: op.endpoint,
            reason: "already_final",
            field: "status",
            message: decision.conflict,
            randomId: report.randomId,
            body: op.raw,
          },
          op.at,
          "duplicate",
          op.headOnly,
        );
      }
      result = { kind: "duplicate" };
      break;
    case "hold":
      // A newer progress update replaces a held one: its cost leaves the budget first.
      forgetHeld(ctx, ctx.q.deleteHeld.all({ id: report.executionId }));
      keepHeld(ctx, report, op.at, repaired, fx);
      relay.hold(report, op.at);
      result = { kind: "held" };
      break;
    case "already-final": {
      const message = `install ${report.randomId} already has a final status (${decision.outcome}); update not applied`;
      logRejection(
        ctx,
        {
          endpoint: op.endpoint,
          reason: "already_final",
          field: "status",
          message,
          randomId: report.randomId,
          body: op.raw,
        },
        op.at,
        null,
        op.headOnly,
      );
      return { kind: "already-final", outcome: decision.outcome };
    }
  }
  logRepair(ctx, op, result, report.randomId);
  return result;
}

/** An execution copied from another store: kept as it is unless its id is stored. */
export function load(
  ctx: WriteContext,
  execution: Execution,
  fx: BatchEffects,
): ResultFor<Extract<WriteOp, { kind: "load" }>> {
  if (ctx.hot.insertExecution.run(execution).changes === 0) return { kind: "duplicate" };
  keepStuckMark(ctx, execution);
  count(fx, execution, 1, execution.updatedAt);
  return { kind: "created", outcome: execution.outcome };
}
