// The write side of the PostgreSQL engine: one transaction per batch, on any number of nodes at
// once (docs/decisions.md, "The PostgreSQL engine: design"). A batch first locks every execution
// and install it touches (advisory locks, in one order), so the domain's decisions see what is
// stored as a single writer would; rollups are counter rows it adds to before COMMIT.
import type { Sql } from "postgres";
import { SignatureSightings, failureSignature, failureSignatureId } from "../../domain/error-signature.ts";
import type { Execution, Report } from "../../domain/execution.ts";
import { decide, executionFromHeld, type HeldReport } from "../../domain/lifecycle.ts";
import { GRAINS, RollupDeltas, entriesOf, type RollupData } from "../../domain/rollup.ts";
import type { RelayPolicy } from "../../domain/relay.ts";
import type { ResultFor, StoreLimits, WriteOp, WriteResult } from "../contract.ts";
import { EVICT_CHUNK, decodeHeld, encodeHeld, type LeavingEntry } from "../shared/budgets.ts";
import { applyAlertOp } from "./alerts.ts";
import { BatchBudget, RETURNING_LEAVING } from "./budgets.ts";
import { relayBatch } from "./relay.ts";
import { SELECT_EXECUTION, UPDATABLE, rowOf } from "./rows.ts";
import { transaction } from "./transaction.ts";

/** Advisory lock of the fold: writers hold it shared, the fold job alone. */
const FOLD_LOCK = 0x666f6c64; // "fold"

/** The mark names in the `marks` table. */
export const MARKS = { foldedUntil: "folded_until", stuckCheckedUntil: "stuck_checked_until" } as const;

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

interface BatchEffects {
  deltas: RollupDeltas;
  sightings: SignatureSightings;
  /** The log entries to place and the counters to add at the end of the batch (budgets.ts). */
  budget: BatchBudget;
  /** A report was held: the held budget is checked at the end. */
  held: boolean;
  /**
   * Changes to the stuck-install mark, in order, made at the end: no batch holds the marks row
   * while it waits for the budget lock. Lowerings in a row are one (the lowest).
   */
  stuck: ({ lower: number } | { from: number; until: number })[];
  relay: ReturnType<typeof relayBatch>;
}

/** A connection inside a transaction (transaction.ts). */
type Tx = Sql;

async function getExecution(tx: Tx, executionId: string): Promise<Execution | undefined> {
  const [row] = await tx.unsafe<Execution[]>(`SELECT ${SELECT_EXECUTION} FROM executions e WHERE e.execution_id = $1`, [executionId]);
  return row;
}

async function attemptsOf(tx: Tx, randomId: string): Promise<number> {
  const [row] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM executions WHERE random_id = ${randomId}`;
  return row?.n ?? 0;
}

/**
 * Inserts `e` unless its id is stored; an execution in progress created before the stuck mark
 * lowers it, or the stuck job would never look at it again.
 */
async function insertExecution(tx: Tx, e: Execution, fx: BatchEffects): Promise<boolean> {
  const rows = await tx`INSERT INTO executions ${tx(rowOf(e))} ON CONFLICT (execution_id) DO NOTHING RETURNING 1`;
  if (rows.length === 1 && e.outcome === "in_progress") {
    const last = fx.stuck.at(-1);
    if (last && "lower" in last) last.lower = Math.min(last.lower, e.createdAt);
    else fx.stuck.push({ lower: e.createdAt });
  }
  return rows.length === 1;
}

/** The stuck mark's changes of the batch, in order. */
async function moveStuckMark(tx: Tx, fx: BatchEffects): Promise<void> {
  for (const change of fx.stuck) {
    if ("lower" in change) await tx`UPDATE marks SET value = ${change.lower} WHERE name = ${MARKS.stuckCheckedUntil} AND value > ${change.lower}`;
    else {
      await tx`INSERT INTO marks (name, value) VALUES (${MARKS.stuckCheckedUntil}, ${change.until})
        ON CONFLICT (name) DO UPDATE SET value = excluded.value WHERE marks.value = ${change.from}`;
    }
  }
}

/** Held reports that left: their cost leaves the held budget. */
function forgetHeld(fx: BatchEffects, gone: readonly { cost: number }[]): void {
  for (const { cost } of gone) {
    fx.budget.add("held.bytes", -cost);
    fx.budget.add("held.count", -1);
  }
}

/** Removes the held reports `where` selects, out of the held budget. */
async function dropHeld(tx: Tx, fx: BatchEffects, where: ReturnType<Tx>): Promise<number> {
  const gone = await tx<{ cost: number }[]>`DELETE FROM held_reports WHERE ${where} RETURNING cost`;
  forgetHeld(fx, gone);
  return gone.length;
}

async function updateExecution(tx: Tx, e: Execution): Promise<void> {
  const row = rowOf(e);
  await tx`UPDATE executions SET ${tx(row, UPDATABLE)} WHERE execution_id = ${e.executionId}`;
}

/** Counts `row` into the rollups with `sign`; a failure's error text is also a sighting. */
function count(fx: BatchEffects, row: Execution, sign: 1 | -1, at: number): void {
  const sig = failureSignature(row.outcome, row.error);
  fx.deltas.add(row, row.outcome, sign, sig?.id ?? null);
  if (sign === 1 && sig) fx.sightings.see(sig, row.error!, row.nsapp, at);
}

function recount(fx: BatchEffects, before: Execution, after: Execution, at: number): void {
  const sig = failureSignature(after.outcome, after.error);
  fx.deltas.change(before, after, failureSignatureId(before.outcome, before.error), sig?.id ?? null);
  if (sig) fx.sightings.see(sig, after.error!, after.nsapp, at);
}

interface HeldRow {
  report: string;
  codec: string | null;
  data: Buffer | null;
  receivedAt: number;
  repaired: boolean;
}
const heldOf = (row: HeldRow): HeldReport => ({ report: decodeHeld(row), at: row.receivedAt, repaired: row.repaired });

async function findHeld(tx: Tx, executionId: string): Promise<HeldReport | null> {
  const [row] = await tx<HeldRow[]>`SELECT report, codec, data, received_at AS "receivedAt", repaired FROM held_reports WHERE execution_id = ${executionId}`;
  return row ? heldOf(row) : null;
}

/** A held report, compressed when that is smaller; a newer one of the same execution replaces it (its cost leaves the budget first). */
async function holdReport(tx: Tx, fx: BatchEffects, report: Report, at: number, repaired: boolean): Promise<void> {
  await dropHeld(tx, fx, tx`execution_id = ${report.executionId}`);
  const columns = encodeHeld(report);
  await tx`INSERT INTO held_reports ${tx({ execution_id: report.executionId, random_id: report.randomId, received_at: at, repaired, ...columns })}`;
  fx.budget.add("held.bytes", columns.cost);
  fx.budget.add("held.count", 1);
  fx.held = true;
}

async function applyReport(tx: Tx, op: Extract<WriteOp, { kind: "report" }>, fx: BatchEffects): Promise<ResultFor<typeof op>> {
  const { report } = op;
  const current = await getExecution(tx, report.executionId);
  const held = current === undefined ? await findHeld(tx, report.executionId) : null;
  const repaired = op.repairs.length > 0;
  const attempt = current === undefined ? (await attemptsOf(tx, report.randomId)) + 1 : current.attempt;
  const decision = decide(current, report, { at: op.at, attempt, held, repaired });
  let result: ResultFor<typeof op>;
  switch (decision.kind) {
    case "insert":
      await insertExecution(tx, decision.row, fx);
      count(fx, decision.row, 1, op.at);
      await fx.relay.queue(tx, report, decision.row, op.at);
      if (held) {
        await dropHeld(tx, fx, tx`execution_id = ${report.executionId}`);
        await fx.relay.releaseAfterStart(tx, report.executionId, decision.row);
      }
      result = { kind: "created", outcome: decision.row.outcome };
      break;
    case "update":
      await updateExecution(tx, decision.row);
      recount(fx, current!, decision.row, op.at);
      await fx.relay.queue(tx, report, decision.row, op.at);
      result = { kind: "updated", outcome: decision.row.outcome };
      break;
    case "duplicate":
      if (decision.row) {
        await updateExecution(tx, decision.row);
        recount(fx, current!, decision.row, op.at);
        await fx.relay.queue(tx, report, decision.row, op.at);
      }
      if (decision.conflict) {
        fx.budget.log({ endpoint: op.endpoint, reason: "already_final", field: "status", message: decision.conflict, randomId: report.randomId, body: op.raw }, op.at, "duplicate");
      }
      result = { kind: "duplicate" };
      break;
    case "hold":
      await holdReport(tx, fx, report, op.at, repaired);
      await fx.relay.hold(tx, report, op.at);
      result = { kind: "held" };
      break;
    case "already-final": {
      const message = `install ${report.randomId} already has a final status (${decision.outcome}); update not applied`;
      fx.budget.log({ endpoint: op.endpoint, reason: "already_final", field: "status", message, randomId: report.randomId, body: op.raw }, op.at, null);
      return { kind: "already-final", outcome: decision.outcome };
    }
  }
  if (op.repairs.length > 0 && result.kind !== "duplicate") {
    const message = `body repaired (${op.repairs.join(", ")}) and ${result.kind}`;
    fx.budget.log({ endpoint: op.endpoint, reason: "repaired", field: null, message, randomId: report.randomId, body: op.raw }, op.at, result.kind);
  }
  return result;
}

/**
 * A held report becomes the execution it describes, without its start report (it waited too long,
 * or held reports are past their budget): nothing acknowledged is dropped. Not waited for: when
 * another batch holds its execution, that batch applies or refreshes the report itself (false).
 */
async function applyHeldAlone(tx: Tx, fx: BatchEffects, row: HeldRow & { executionId: string; randomId: string }): Promise<boolean> {
  const [got] = await tx<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(${String(lockKey(`e:${row.executionId}`))}::bigint) AND pg_try_advisory_xact_lock(${String(lockKey(`r:${row.randomId}`))}::bigint) AS ok`;
  if (!got?.ok) return false;
  if ((await dropHeld(tx, fx, tx`execution_id = ${row.executionId} AND received_at = ${row.receivedAt}`)) === 0) return false;
  if ((await getExecution(tx, row.executionId)) !== undefined) return false; // applied meanwhile
  const execution = executionFromHeld(heldOf(row), (await attemptsOf(tx, row.randomId)) + 1);
  await insertExecution(tx, execution, fx);
  count(fx, execution, 1, row.receivedAt);
  await fx.relay.releaseAlone(tx, execution.executionId, execution);
  return true;
}

/** Held reports received before `before`, oldest first (after `after`), at most `limit`. */
const oldestHeld = (tx: Tx, before: number, limit: number, after: { at: number; id: string } | null) => tx<(HeldRow & { executionId: string; randomId: string })[]>`
  SELECT execution_id AS "executionId", random_id AS "randomId", report, codec, data, received_at AS "receivedAt", repaired FROM held_reports
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

/** The hours in [from, until) added from hour rows to the day and month rows that contain them. */
async function fold(tx: Tx, from: number, until: number): Promise<number> {
  if (until <= from) return 0;
  const [hours] = await tx<{ n: number }[]>`SELECT count(DISTINCT bucket)::int AS n FROM rollup_counts WHERE grain = ${GRAINS.hour} AND bucket >= ${from} AND bucket < ${until}`;
  for (const grain of [GRAINS.day, GRAINS.month]) {
    // Day and month buckets of UTC, as domain/rollup.ts bucketStart.
    const bucket =
      grain === GRAINS.day
        ? tx`(bucket - bucket % 86400000)`
        : tx`(extract(epoch FROM date_trunc('month', to_timestamp(bucket / 1000.0) AT TIME ZONE 'UTC')) * 1000)::bigint`;
    await tx`
      INSERT INTO rollup_counts (grain, slice, bucket, dim, value, c0, c1, c2, c3, c4)
      SELECT ${grain}, slice, ${bucket} AS b, dim, value, sum(c0), sum(c1), sum(c2), sum(c3), sum(c4)
      FROM rollup_counts WHERE grain = ${GRAINS.hour} AND bucket >= ${from} AND bucket < ${until}
      GROUP BY slice, b, dim, value ORDER BY slice, b, dim, value
      ON CONFLICT (grain, slice, bucket, dim, value) DO UPDATE SET c0 = rollup_counts.c0 + excluded.c0, c1 = rollup_counts.c1 + excluded.c1,
        c2 = rollup_counts.c2 + excluded.c2, c3 = rollup_counts.c3 + excluded.c3, c4 = rollup_counts.c4 + excluded.c4`;
    await tx`
      INSERT INTO rollup_durations (grain, slice, bucket, outcome, bin, n)
      SELECT ${grain}, slice, ${bucket} AS b, outcome, bin, sum(n) FROM rollup_durations
      WHERE grain = ${GRAINS.hour} AND bucket >= ${from} AND bucket < ${until} GROUP BY slice, b, outcome, bin ORDER BY slice, b, outcome, bin
      ON CONFLICT (grain, slice, bucket, outcome, bin) DO UPDATE SET n = rollup_durations.n + excluded.n`;
    await tx`
      INSERT INTO rollup_errors (grain, slice, bucket, signature, n)
      SELECT ${grain}, slice, ${bucket} AS b, signature, sum(n) FROM rollup_errors
      WHERE grain = ${GRAINS.hour} AND bucket >= ${from} AND bucket < ${until} GROUP BY slice, b, signature ORDER BY slice, b, signature
      ON CONFLICT (grain, slice, bucket, signature) DO UPDATE SET n = rollup_errors.n + excluded.n`;
  }
  // Entries that came back to zero are counted by nobody: they go.
  await tx`DELETE FROM rollup_counts WHERE c0 = 0 AND c1 = 0 AND c2 = 0 AND c3 = 0 AND c4 = 0`;
  await tx`DELETE FROM rollup_durations WHERE n = 0`;
  await tx`DELETE FROM rollup_errors WHERE n = 0`;
  await setMark(tx, MARKS.foldedUntil, until);
  return hours?.n ?? 0;
}

const setMark = (tx: Tx, name: string, value: number) =>
  tx`INSERT INTO marks (name, value) VALUES (${name}, ${value}) ON CONFLICT (name) DO UPDATE SET value = excluded.value`;

export async function getMark(sql: Sql | Tx, name: string): Promise<number> {
  const [row] = await sql<{ value: number }[]>`SELECT value FROM marks WHERE name = ${name}`;
  return row?.value ?? 0;
}

/** Adds a batch's rollup deltas to the counter rows: one statement per table, keys in one order. */
export async function addRollups(tx: Tx, cells: Iterable<{ key: { grain: number; app: string; bucket: number }; data: RollupData }>): Promise<void> {
  const counts: [number, string, number, string, string, number, number, number, number, number][] = [];
  const durations: [number, string, number, string, number, number][] = [];
  const errors: [number, string, number, string, number][] = [];
  for (const { key, data } of cells) {
    const e = entriesOf(data);
    for (const c of e.counts) counts.push([key.grain, key.app, key.bucket, c.dim, c.value, ...c.counts]);
    for (const d of e.durations) durations.push([key.grain, key.app, key.bucket, d.outcome, d.bin, d.n]);
    for (const x of e.errors) errors.push([key.grain, key.app, key.bucket, x.signature, x.n]);
  }
  const column = <T>(rows: readonly (readonly unknown[])[], i: number) => rows.map((r) => r[i] as T);
  if (counts.length > 0) {
    await tx`
      INSERT INTO rollup_counts (grain, slice, bucket, dim, value, c0, c1, c2, c3, c4)
      SELECT * FROM unnest(${column<number>(counts, 0)}::smallint[], ${column<string>(counts, 1)}::text[], ${column<number>(counts, 2)}::bigint[],
        ${column<string>(counts, 3)}::text[], ${column<string>(counts, 4)}::text[], ${column<number>(counts, 5)}::bigint[], ${column<number>(counts, 6)}::bigint[],
        ${column<number>(counts, 7)}::bigint[], ${column<number>(counts, 8)}::bigint[], ${column<number>(counts, 9)}::bigint[])
      ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT (grain, slice, bucket, dim, value) DO UPDATE SET c0 = rollup_counts.c0 + excluded.c0, c1 = rollup_counts.c1 + excluded.c1,
        c2 = rollup_counts.c2 + excluded.c2, c3 = rollup_counts.c3 + excluded.c3, c4 = rollup_counts.c4 + excluded.c4`;
  }
  if (durations.length > 0) {
    await tx`
      INSERT INTO rollup_durations (grain, slice, bucket, outcome, bin, n)
      SELECT * FROM unnest(${column<number>(durations, 0)}::smallint[], ${column<string>(durations, 1)}::text[], ${column<number>(durations, 2)}::bigint[],
        ${column<string>(durations, 3)}::text[], ${column<number>(durations, 4)}::smallint[], ${column<number>(durations, 5)}::bigint[])
      ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT (grain, slice, bucket, outcome, bin) DO UPDATE SET n = rollup_durations.n + excluded.n`;
  }
  if (errors.length > 0) {
    await tx`
      INSERT INTO rollup_errors (grain, slice, bucket, signature, n)
      SELECT * FROM unnest(${column<number>(errors, 0)}::smallint[], ${column<string>(errors, 1)}::text[], ${column<number>(errors, 2)}::bigint[],
        ${column<string>(errors, 3)}::text[], ${column<number>(errors, 4)}::bigint[])
      ORDER BY 1, 2, 3, 4
      ON CONFLICT (grain, slice, bucket, signature) DO UPDATE SET n = rollup_errors.n + excluded.n`;
  }
}

async function mergeSightings(tx: Tx, sightings: SignatureSightings): Promise<void> {
  for (const [id, seen] of [...sightings.seen].sort(([a], [b]) => (a < b ? -1 : 1))) {
    await tx`
      INSERT INTO error_signatures (id, signature, example, first_seen, last_seen, apps)
      VALUES (${id}, ${seen.signature}, ${seen.example}, ${seen.firstSeen}, ${seen.lastSeen}, ${JSON.stringify([...seen.apps].sort())})
      ON CONFLICT (id) DO UPDATE SET
        first_seen = least(error_signatures.first_seen, excluded.first_seen),
        last_seen = greatest(error_signatures.last_seen, excluded.last_seen),
        apps = (SELECT coalesce(jsonb_agg(a ORDER BY a), '[]'::jsonb)::text FROM (
          SELECT DISTINCT jsonb_array_elements_text(error_signatures.apps::jsonb || excluded.apps::jsonb) AS a) s)`;
  }
}

async function apply(tx: Tx, op: WriteOp, fx: BatchEffects): Promise<WriteResult> {
  switch (op.kind) {
    case "report":
      return applyReport(tx, op, fx);
    case "reject":
      fx.budget.log(op.rejection, op.at, null);
      return { kind: "logged" };
    case "load": {
      if (!(await insertExecution(tx, op.execution, fx))) return { kind: "duplicate" };
      count(fx, op.execution, 1, op.execution.updatedAt);
      return { kind: "created", outcome: op.execution.outcome };
    }
    case "load-held": {
      const { report, at, repaired } = op.held;
      if ((await getExecution(tx, report.executionId)) !== undefined || (await findHeld(tx, report.executionId)) !== null) return { kind: "duplicate" };
      await holdReport(tx, fx, report, at, repaired);
      return { kind: "created" };
    }
    case "load-rejected": {
      const { entry, source } = op;
      const mark = `copy:${source}`;
      if (entry.id <= (await getMark(tx, mark))) return { kind: "duplicate" };
      await setMark(tx, mark, entry.id);
      const { id: _, receivedAt, body, bodyKept, bodySize, bodySha256, replayedAt, replayResult, result, ...rejection } = entry;
      const placed = await fx.budget.load({ ...rejection, body }, receivedAt, result, { replayedAt, replayResult }, bodyKept ? null : { size: bodySize, hash: bodySha256 });
      return placed ? { kind: "created", bodyKept: placed.bodyStore !== "head" || placed.body.byteLength >= placed.bodySize } : { kind: "dropped" };
    }
    case "delete": {
      const records = await tx.unsafe<Execution[]>(`SELECT ${SELECT_EXECUTION} FROM executions e WHERE e.random_id = $1`, [op.randomId]);
      if (records.length > 0) await tx`DELETE FROM executions WHERE random_id = ${op.randomId}`;
      for (const record of records) count(fx, record, -1, op.at);
      const held = await tx<{ executionId: string; cost: number }[]>`DELETE FROM held_reports WHERE random_id = ${op.randomId} RETURNING execution_id AS "executionId", cost`;
      forgetHeld(fx, held);
      await fx.budget.flushLog(); // entries this batch logged for the install go too
      const logged = await tx.unsafe<LeavingEntry[]>(`DELETE FROM rejected_reports WHERE random_id = $1 RETURNING ${RETURNING_LEAVING}`, [op.randomId]);
      await fx.budget.release(logged);
      // The install's reports waiting to be relayed go too: its executions', and its held reports'.
      await fx.relay.forget(tx, [...records.map((r) => r.executionId), ...held.map((h) => h.executionId)]);
      return { kind: "deleted", found: records.length > 0 || held.length > 0 || logged.length > 0, executions: records.length };
    }
    case "expire": {
      const record = await getExecution(tx, op.executionId);
      if (!record || record.outcome !== "in_progress") return { kind: "expired", changed: false };
      await tx`UPDATE executions SET outcome = 'unknown', updated_at = ${op.at} WHERE execution_id = ${op.executionId}`;
      count(fx, record, -1, op.at);
      count(fx, { ...record, outcome: "unknown", updatedAt: op.at }, 1, op.at);
      return { kind: "expired", changed: true };
    }
    case "forget-rejected": {
      await fx.budget.flushLog();
      const gone = await tx.unsafe<LeavingEntry[]>(`DELETE FROM rejected_reports WHERE received_at < $1 RETURNING ${RETURNING_LEAVING}`, [op.before]);
      await fx.budget.release(gone);
      return { kind: "forgotten", count: gone.length };
    }
    case "expire-held": {
      const count = await expireHeld(tx, op.before, op.limit, fx);
      fx.budget.add("held.expired_total", count);
      return { kind: "expired-held", count };
    }
    case "stuck-checked":
      fx.stuck.push({ from: op.from, until: op.until });
      return { kind: "marked" };
    case "mark-replayed":
      // Under the budget lock: a log entry's row is changed only by a batch that holds it (eviction removes rows).
      await fx.budget.flushLog();
      await tx`UPDATE rejected_reports SET replayed_at = ${op.at}, replay_result = ${op.result} WHERE id = ${op.rejectedId}`;
      return { kind: "marked" };
    case "fold": {
      // The batch's own counts so far go in first: the fold sums what is stored.
      await addRollups(tx, [...fx.deltas.cells.values(), ...fx.deltas.openCells().values()]);
      const from = fx.deltas.foldedUntil;
      const hours = await fold(tx, from, op.until);
      fx.deltas = new RollupDeltas(Math.max(from, op.until));
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
  }
}

/** Applies `ops` in one transaction, in order; the results in the same order. `relay`: what the batch relays (Store.setRelay). */
export async function writeBatch(sql: Sql, ops: readonly WriteOp[], limits: StoreLimits, relay: RelayPolicy | null): Promise<WriteResult[]> {
  return transaction(sql, async (tx) => {
    const folds = ops.some((op) => op.kind === "fold");
    // Writers share the fold lock; a fold waits for them and they for it, so no count is added
    // to an hour while it is being folded, and every writer reads the mark as it stands.
    await (folds ? tx`SELECT pg_advisory_xact_lock(${FOLD_LOCK})` : tx`SELECT pg_advisory_xact_lock_shared(${FOLD_LOCK})`);
    const keys = lockNames(ops).map(lockKey).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (keys.length > 0) await tx`SELECT installstats_lock_all(${keys.map(String)}::bigint[])`;
    const fx: BatchEffects = {
      deltas: new RollupDeltas(await getMark(tx, MARKS.foldedUntil)),
      sightings: new SignatureSightings(),
      budget: new BatchBudget(tx, limits),
      held: false,
      stuck: [],
      relay: relayBatch(relay),
    };
    const results: WriteResult[] = [];
    for (const op of ops) results.push(await apply(tx, op, fx));
    // The rest in the order every batch takes its locks: the budget lock and counter rows, the
    // stuck mark, rollup rows, signatures (budgets.ts).
    if (fx.held) await keepHeldWithinBudget(tx, fx, limits);
    await fx.budget.finish();
    await moveStuckMark(tx, fx);
    await addRollups(tx, [...fx.deltas.cells.values(), ...fx.deltas.openCells().values()]);
    await mergeSightings(tx, fx.sightings);
    await fx.relay.trim(tx, ops.reduce((at, op) => Math.max(at, op.at), 0));
    await fx.relay.flush(tx);
    return results;
  });
}
