// The write side of the PostgreSQL engine: one transaction per batch, on any number of nodes at
// once (docs/decisions/2026-11-25-postgresql-engine.md). A batch first locks every execution
// and install it touches (advisory locks, in one order), so the domain's decisions see what is
// stored as a single writer would; it appends its counts to the rollup deltas before COMMIT (the
// fold merges them into the cells: fold.ts).
import type { Sql } from "postgres";
import { SignatureSightings } from "../../domain/error-signature.ts";
import type { Execution, Report } from "../../domain/execution.ts";
import { executionFromHeld, type HeldReport } from "../../domain/lifecycle.ts";
import { RollupDeltas, storedSlicesOf } from "../../domain/rollup.ts";
import type { RelayPolicy } from "../../domain/relay.ts";
import type { StoreLimits } from "../contract/maintenance.ts";
import type { WriteOp, WriteResult } from "../contract/store.ts";
import { EVICT_CHUNK, encodeHeld, type LeavingEntry } from "../common/budgets.ts";
import { count } from "../common/counting.ts";
import { applyAlertOp } from "./alerts.ts";
import { applyIssueOp } from "./issues.ts";
import { BatchBudget, RETURNING_LEAVING } from "./budgets.ts";
import { appendDeltas, dropCells, foldAllDeltas, foldHours, type PgLabels } from "./cells.ts";
import {
  MARKS,
  SELECT_HELD,
  applyIntake,
  forgetHeld,
  heldOf,
  heldRows,
  insertRows,
  isIntake,
  lowerStuckMark,
  type BatchEffects,
  type HeldRow,
  type IntakeOp,
  type Tx,
} from "./intake.ts";
import { missingMonth, monthOf, partitionName, type Partitions } from "./partitions.ts";
import { relayBatch } from "./relay.ts";
import { FROM_IDS, SELECT_EXECUTION } from "./rows.ts";
import { transaction } from "./transaction.ts";
import { importMarkName } from "../common/marks.ts";

/** Advisory lock every batch takes: shared by writers (and the deltas' fold), alone for a fold, a month's drop, or a batch too large to lock key by key. */
export const FOLD_LOCK = 0x666f6c64; // "fold"

/** Most execution and install locks one batch takes; a batch naming more runs alone (see runBatch). */
const MAX_KEY_LOCKS = 1024;

/** A 64-bit advisory lock key for a name: the same on every node (same hash, same binary). */
const lockKey = (name: string): bigint => BigInt.asIntN(64, BigInt(Bun.hash.wyhash(name, 0n)));

/** The names a batch locks before it reads: each execution it may change, and each install (attempt numbers, deletion). */
function lockNames(ops: readonly WriteOp[]): string[] {
  const names = new Set<string>();
  for (const op of ops) {
    if (op.kind === "report") names.add(`e:${op.report.executionId}`).add(`r:${op.report.randomId}`);
    else if (op.kind === "load") names.add(`e:${op.execution.executionId}`).add(`r:${op.execution.randomId}`);
    else if (op.kind === "load-held") names.add(`e:${op.held.report.executionId}`).add(`r:${op.held.report.randomId}`);
    else if (op.kind === "load-rejected") names.add(`copy:${op.source}`);
    else if (op.kind === "delete") names.add(`r:${op.randomId}`);
    else if (op.kind === "expire") names.add(`e:${op.executionId}`);
  }
  return [...names];
}

async function getExecution(tx: Tx, executionId: string): Promise<Execution | undefined> {
  const [row] = await tx<
    Execution[]
  >`SELECT ${tx.unsafe(SELECT_EXECUTION)} FROM ${tx.unsafe(FROM_IDS)} WHERE k.execution_id = ${executionId}`;
  return row;
}

async function attemptsOf(tx: Tx, randomId: string): Promise<number> {
  const [row] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM execution_ids WHERE random_id = ${randomId}`;
  return row?.n ?? 0;
}

/** Inserts `e` (its id is not stored: the caller looked under the lock). */
async function insertExecution(tx: Tx, e: Execution, fx: BatchEffects): Promise<void> {
  await insertRows(tx, [e]);
  if (e.outcome === "in_progress") lowerStuckMark(fx, e.createdAt);
}

/** The stuck mark's changes of the batch, in order. */
async function moveStuckMark(tx: Tx, fx: BatchEffects): Promise<void> {
  for (const change of fx.stuck) {
    if ("lower" in change)
      await tx`UPDATE marks SET value = ${change.lower} WHERE name = ${MARKS.stuckCheckedUntil} AND value > ${change.lower}`;
    else {
      await tx`INSERT INTO marks (name, value) VALUES (${MARKS.stuckCheckedUntil}, ${change.until})
        ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE marks.value = ${change.from}`;
    }
  }
}

/** Removes the held reports `where` selects, out of the held budget; their execution ids. */
async function dropHeld(tx: Tx, fx: BatchEffects, where: ReturnType<Tx>): Promise<string[]> {
  const gone = await tx<
    { executionId: string; cost: number }[]
  >`DELETE FROM held_reports WHERE ${where} RETURNING execution_id AS "executionId", cost`;
  forgetHeld(fx, gone);
  return gone.map((g) => g.executionId);
}

async function findHeld(tx: Tx, executionId: string): Promise<HeldReport | null> {
  const [row] = await tx<
    HeldRow[]
  >`SELECT ${tx.unsafe(SELECT_HELD)} FROM held_reports WHERE execution_id = ${executionId}`;
  return row ? heldOf(row) : null;
}

/** Removes an install: its executions (their counts taken out), ids, held reports, log entries and relay entries. */
async function deleteInstall(
  tx: Tx,
  randomId: string,
  at: number,
  fx: BatchEffects,
): Promise<{ found: boolean; executions: number }> {
  const records = await tx<
    Execution[]
  >`SELECT ${tx.unsafe(SELECT_EXECUTION)} FROM ${tx.unsafe(FROM_IDS)} WHERE k.random_id = ${randomId}`;
  if (records.length > 0) {
    await tx`DELETE FROM executions WHERE (created_at, seq) IN (SELECT created_at, seq FROM execution_ids WHERE random_id = ${randomId})`;
    await tx`DELETE FROM execution_ids WHERE random_id = ${randomId}`;
  }
  for (const record of records) count(fx, record, -1, at);
  const held = await dropHeld(tx, fx, tx`random_id = ${randomId}`);
  await fx.budget.flushLog(); // entries this batch logged for the install go too
  const logged = await tx.unsafe<LeavingEntry[]>(
    `DELETE FROM rejected_reports WHERE random_id = $1 RETURNING ${RETURNING_LEAVING}`,
    [randomId],
  );
  await fx.budget.release(logged);
  // The install's reports waiting to be relayed go too: its executions', and its held reports'.
  await fx.relay.forget(tx, [...records.map((r) => r.executionId), ...held]);
  return {
    found: records.length > 0 || held.length > 0 || logged.length > 0,
    executions: records.length,
  };
}

/** The batch's counts so far go into the rollup deltas, and it counts afresh from there. */
async function flushCounts(tx: Tx, fx: BatchEffects, foldedUntil = fx.deltas.foldedUntil): Promise<void> {
  await appendDeltas(tx, fx.labels, [...fx.deltas.cells.values(), ...fx.deltas.openCells().values()]);
  fx.deltas = new RollupDeltas(foldedUntil, storedSlicesOf);
}

/**
 * Retention by whole months: every partition of a month before the one `before` falls in goes,
 * oldest first, with what depends on it. An install of the month with executions in other months
 * is deleted first as a delete op would (its counts taken out); then the month's own installs'
 * held reports, log entries and relay entries, their ids, the month's rollup cells (every count
 * in them is of an execution created that month), and the partition itself.
 */
async function dropBefore(
  tx: Tx,
  before: number,
  at: number,
  fx: BatchEffects,
  partitions: Partitions,
): Promise<{ executions: number; until: number }> {
  const until = monthOf(before).from;
  let executions = 0;
  for (const from of await partitions.list(tx)) {
    if (from >= until) break;
    const { to } = monthOf(from);
    const spanning = await tx<{ randomId: string }[]>`
      SELECT DISTINCT k.random_id AS "randomId" FROM execution_ids k WHERE k.created_at >= ${from} AND k.created_at < ${to}
        AND EXISTS (SELECT 1 FROM execution_ids o WHERE o.random_id = k.random_id AND (o.created_at < ${from} OR o.created_at >= ${to}))`;
    for (const { randomId } of spanning) executions += (await deleteInstall(tx, randomId, at, fx)).executions;
    await flushCounts(tx, fx);
    const month = tx`SELECT random_id FROM execution_ids WHERE created_at >= ${from} AND created_at < ${to}`;
    const held = await dropHeld(tx, fx, tx`random_id IN (${month})`);
    await fx.budget.flushLog();
    await fx.budget.release(
      await tx<
        LeavingEntry[]
      >`DELETE FROM rejected_reports WHERE random_id IN (${month}) RETURNING ${tx.unsafe(RETURNING_LEAVING)}`,
    );
    await fx.relay.forget(tx, held);
    await fx.relay.forgetCreated(tx, from, to);
    executions += (await tx`DELETE FROM execution_ids WHERE created_at >= ${from} AND created_at < ${to}`).count;
    await dropCells(tx, from, to);
    await tx.unsafe(`DROP TABLE "${partitionName(from)}"`);
    partitions.forget(from);
  }
  return { executions, until };
}

/**
 * A held report becomes the execution it describes, without its start report (it waited too long,
 * or held reports are past their budget): nothing acknowledged is dropped. Not waited for: when
 * another batch holds its execution, that batch applies or refreshes the report itself (false).
 */
async function applyHeldAlone(
  tx: Tx,
  fx: BatchEffects,
  row: HeldRow & { executionId: string; randomId: string },
): Promise<boolean> {
  const [got] = await tx<
    { ok: boolean }[]
  >`SELECT pg_try_advisory_xact_lock(${String(lockKey(`e:${row.executionId}`))}::bigint) AND pg_try_advisory_xact_lock(${String(lockKey(`r:${row.randomId}`))}::bigint) AS ok`;
  if (!got?.ok) return false;
  if ((await dropHeld(tx, fx, tx`execution_id = ${row.executionId} AND received_at = ${row.receivedAt}`)).length === 0)
    return false;
  if ((await getExecution(tx, row.executionId)) !== undefined) return false; // applied meanwhile
  const execution = executionFromHeld(heldOf(row), (await attemptsOf(tx, row.randomId)) + 1);
  await insertExecution(tx, execution, fx);
  count(fx, execution, 1, row.receivedAt);
  await fx.relay.releaseAlone(tx, execution.executionId, execution);
  return true;
}

/** Held reports received before `before`, oldest first (after `after`), at most `limit`. */
const oldestHeld = (tx: Tx, before: number, limit: number, after: { at: number; id: string } | null) => tx<
  (HeldRow & { executionId: string; randomId: string })[]
>`
  SELECT execution_id AS "executionId", random_id AS "randomId", ${tx.unsafe(SELECT_HELD)} FROM held_reports
  WHERE received_at < ${before} AND ${after ? tx`(received_at, execution_id) > (${after.at}, ${after.id})` : tx`TRUE`}
  ORDER BY received_at, execution_id LIMIT ${limit}`;

/** Held reports received before `before`, oldest first, applied on their own (a node busy with one is skipped). */
async function expireHeld(tx: Tx, before: number, limit: number, fx: BatchEffects): Promise<number> {
  let applied = 0;
  for (const row of await oldestHeld(tx, before, limit, null)) if (await applyHeldAlone(tx, fx, row)) applied++;
  return applied;
}

/** Past the held budget, the oldest held reports are applied on their own until it fits again (under the budget lock). */
async function keepHeldWithinBudget(tx: Tx, fx: BatchEffects, limits: StoreLimits): Promise<void> {
  await fx.budget.lock();
  const over = () => fx.budget.get("held.count") > 0 && fx.budget.get("held.bytes") > limits.heldBytes;
  let after: { at: number; id: string } | null = null;
  while (over()) {
    const oldest = await oldestHeld(tx, Number.MAX_SAFE_INTEGER, EVICT_CHUNK, after);
    if (oldest.length === 0) return;
    for (const row of oldest) {
      if (!over()) return;
      if (await applyHeldAlone(tx, fx, row)) fx.budget.add("held.overflowed_total", 1);
    }
    const last = oldest.at(-1)!;
    after = { at: last.receivedAt, id: last.executionId };
  }
}

/** A held report copied from another store (load-held): kept as it is unless its execution or a held report of it is stored. */
async function loadHeld(tx: Tx, fx: BatchEffects, report: Report, at: number, repaired: boolean): Promise<boolean> {
  if ((await getExecution(tx, report.executionId)) !== undefined || (await findHeld(tx, report.executionId)) !== null)
    return false;
  await tx`INSERT INTO held_reports ${tx(heldRows(fx, [{ report, at, repaired, columns: encodeHeld(report) }]))}`;
  return true;
}

const setMark = (tx: Tx, name: string, value: number) =>
  tx`INSERT INTO marks (name, value) VALUES (${name}, ${value}) ON CONFLICT (name) DO UPDATE SET value = excluded.value`;

export async function getMark(sql: Sql | Tx, name: string): Promise<number> {
  const [row] = await sql<{ value: number }[]>`SELECT value FROM marks WHERE name = ${name}`;
  return row?.value ?? 0;
}

export async function mergeSightings(tx: Tx, sightings: SignatureSightings): Promise<void> {
  for (const [id, seen] of [...sightings.seen].sort(([a], [b]) => (a < b ? -1 : 1))) {
    await tx`
      INSERT INTO error_signatures (id, signature, example, first_seen, last_seen, apps)
      VALUES (${id}, ${seen.signature}, ${seen.example}, ${seen.firstSeen}, ${seen.lastSeen}, ${JSON.stringify([...seen.apps].sort())})
      ON CONFLICT (id) DO UPDATE SET
        first_seen = least(error_signatures.first_seen, excluded.first_seen),
        last_seen = greatest(error_signatures.last_seen, excluded.last_seen),
        apps = CASE WHEN error_signatures.apps::jsonb @> excluded.apps::jsonb THEN error_signatures.apps ELSE (
          SELECT coalesce(jsonb_agg(a ORDER BY a), '[]'::jsonb)::text FROM (
            SELECT DISTINCT jsonb_array_elements_text(error_signatures.apps::jsonb || excluded.apps::jsonb) AS a) s) END`;
  }
}

type MaintenanceOp = Exclude<WriteOp, IntakeOp>;

async function apply(tx: Tx, op: MaintenanceOp, fx: BatchEffects, partitions: Partitions): Promise<WriteResult> {
  switch (op.kind) {
    case "load-held": {
      const { report, at, repaired } = op.held;
      return (await loadHeld(tx, fx, report, at, repaired)) ? { kind: "created" } : { kind: "duplicate" };
    }
    case "load-rejected": {
      const { entry, source } = op;
      const mark = `copy:${source}`;
      if (entry.id <= (await getMark(tx, mark))) return { kind: "duplicate" };
      await setMark(tx, mark, entry.id);
      const {
        id: _,
        receivedAt,
        body,
        bodyKept,
        bodySize,
        bodySha256,
        replayedAt,
        replayResult,
        result,
        ...rejection
      } = entry;
      const placed = await fx.budget.load(
        { ...rejection, body },
        receivedAt,
        result,
        { replayedAt, replayResult },
        bodyKept ? null : { size: bodySize, hash: bodySha256 },
      );
      return placed
        ? {
            kind: "created",
            bodyKept: placed.bodyStore !== "head" || placed.body.byteLength >= placed.bodySize,
          }
        : { kind: "dropped" };
    }
    case "delete":
      return {
        kind: "deleted",
        ...(await deleteInstall(tx, op.randomId, op.at, fx)),
      };
    case "drop-before":
      return {
        kind: "dropped",
        ...(await dropBefore(tx, op.before, op.at, fx, partitions)),
      };
    case "expire": {
      const record = await getExecution(tx, op.executionId);
      if (!record || record.outcome !== "in_progress") return { kind: "expired", changed: false };
      await tx`UPDATE executions SET outcome = 'unknown', updated_at = ${op.at} WHERE execution_id = ${op.executionId} AND created_at = ${record.createdAt}`;
      count(fx, record, -1, op.at);
      count(fx, { ...record, outcome: "unknown", updatedAt: op.at }, 1, op.at);
      return { kind: "expired", changed: true };
    }
    case "forget-rejected": {
      await fx.budget.flushLog();
      const gone = await tx.unsafe<LeavingEntry[]>(
        `DELETE FROM rejected_reports WHERE received_at < $1 RETURNING ${RETURNING_LEAVING}`,
        [op.before],
      );
      await fx.budget.release(gone);
      return { kind: "forgotten", count: gone.length };
    }
    case "expire-held": {
      const count = await expireHeld(tx, op.before, op.limit, fx);
      fx.budget.add("held.expired_total", count);
      return { kind: "expired-held", count };
    }
    case "import-mark":
      await setMark(tx, importMarkName(op.source), op.position);
      return { kind: "marked" };
    case "stuck-checked":
      fx.stuck.push({ from: op.from, until: op.until });
      return { kind: "marked" };
    case "mark-replayed":
      // Under the budget lock: a log entry's row is changed only by a batch that holds it (eviction removes rows).
      await fx.budget.flushLog();
      await tx`UPDATE rejected_reports SET replayed_at = ${op.at}, replay_result = ${op.result} WHERE id = ${op.rejectedId}`;
      return { kind: "marked" };
    case "fold": {
      // The batch's own counts so far go in first, and every delta into the cells: the fold sums
      // what is stored (it holds the fold lock alone: no delta is added or folded meanwhile).
      const from = fx.deltas.foldedUntil;
      await flushCounts(tx, fx, Math.max(from, op.until));
      if (op.until <= from) return { kind: "folded", hours: 0 };
      await foldAllDeltas(tx, fx.labels);
      const hours = await foldHours(tx, fx.labels, from, op.until);
      await setMark(tx, MARKS.foldedUntil, op.until);
      return { kind: "folded", hours };
    }
    case "alert-round":
    case "alert-silence":
    case "alert-delivery":
    case "alert-forget":
      return applyAlertOp(tx, op);
    case "relay-claim":
      return fx.relay.claim(tx, op);
    case "relay-settle":
      return fx.relay.settle(tx, op);
    case "relay-control":
      return fx.relay.control(tx, op);
    case "issue-claim":
    case "issue-settle":
    case "issue-forget":
      return applyIssueOp(tx, op);
  }
}

/** Creation times of the executions the ops may create, whose months need a partition first. */
function createdAts(ops: readonly WriteOp[]): number[] {
  const times: number[] = [];
  for (const op of ops) {
    if (op.kind === "report") times.push(op.at);
    else if (op.kind === "load") times.push(op.execution.createdAt);
  }
  return times;
}

/** What a batch needs besides its ops: the budgets' limits, what it relays (Store.setRelay), the partitions known, the rollup labels. */
export interface BatchContext {
  limits: StoreLimits;
  relay: RelayPolicy | null;
  partitions: Partitions;
  labels: PgLabels;
}

/**
 * Applies `ops` in one transaction, in order; the results in the same order. The months the ops
 * create executions in get their partitions first (outside the batch: attaching one waits for
 * the transactions on executions); a month found missing during the batch (a held report of
 * a month made earlier and since dropped, another node's retention) is made and the batch run again.
 */
export async function writeBatch(sql: Sql, ops: readonly WriteOp[], context: BatchContext): Promise<WriteResult[]> {
  await context.partitions.ensure(createdAts(ops));
  for (let attempt = 0; ; attempt++) {
    try {
      return await runBatch(sql, ops, context);
    } catch (e) {
      const month = missingMonth(e);
      if (month === null || attempt >= 3) throw e;
      await context.partitions.ensure([month], true);
    }
  }
}

async function runBatch(
  sql: Sql,
  ops: readonly WriteOp[],
  { limits, relay, partitions, labels }: BatchContext,
): Promise<WriteResult[]> {
  const batchLabels = labels.batch();
  const results = await transaction(sql, async (tx) => {
    // Writers share the fold lock. A fold waits for them and they for it, so no count is added to
    // an hour while it is being folded, and every writer reads the mark as it stands; retention by
    // whole months takes it alone too, so no write lands in a month while it goes.
    // A batch naming more executions and installs than MAX_KEY_LOCKS (a seed's, a copy's) takes it
    // alone as well, instead of a lock each: the server's lock table has room for a few thousand
    // locks in all (max_locks_per_transaction x max_connections), and several such batches at once
    // would fill it ("out of shared memory").
    // One round trip (migration 0013's installstats_begin): the fold lock, the keys' locks in
    // order, then the fold mark, read after the locks are held.
    const names = lockNames(ops);
    const alone = names.length > MAX_KEY_LOCKS || ops.some((op) => op.kind === "fold" || op.kind === "drop-before");
    const keys = alone ? [] : names.map(lockKey).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const [begun] = await tx<{ foldedUntil: number }[]>`
      SELECT installstats_begin(${FOLD_LOCK}, ${alone}, ${keys.map(String)}::bigint[], ${MARKS.foldedUntil}) AS "foldedUntil"`;
    const fx: BatchEffects = {
      deltas: new RollupDeltas(begun!.foldedUntil, storedSlicesOf),
      labels: batchLabels,
      sightings: new SignatureSightings(),
      budget: new BatchBudget(tx, limits),
      held: false,
      stuck: [],
      relay: relayBatch(relay),
    };
    const results: WriteResult[] = [];
    // Runs of ingestion's ops are read and written set-wise (intake.ts); a maintenance op on its own.
    for (let i = 0; i < ops.length; ) {
      let end = i;
      while (end < ops.length && isIntake(ops[end]!)) end++;
      if (end > i) {
        results.push(...(await applyIntake(tx, ops.slice(i, end) as IntakeOp[], fx)));
        i = end;
      } else results.push(await apply(tx, ops[i++] as MaintenanceOp, fx, partitions));
    }
    // The rest in the order every batch takes its locks: the budget lock and counter rows, the
    // stuck mark, rollup cells, signatures, the relay's counters (budgets.ts).
    if (fx.held) await keepHeldWithinBudget(tx, fx, limits);
    await fx.budget.finish();
    await moveStuckMark(tx, fx);
    await flushCounts(tx, fx);
    await mergeSightings(tx, fx.sightings);
    await fx.relay.trim(
      tx,
      ops.reduce((at, op) => Math.max(at, op.at), 0),
    );
    await fx.relay.flush(tx);
    return results;
  });
  batchLabels.commit();
  return results;
}
