// The relay's outbox in the PostgreSQL engine, shared by every node (contract/relay.ts Store.setRelay
// and the relay-* writes). An accepted report's entry is written in the batch's transaction, under
// the advisory locks of its execution, so an execution's entries are queued in order. Senders on
// several nodes claim with FOR UPDATE SKIP LOCKED and a lease, so no entry is in two claims, and
// an execution's later entry is claimable only once its earlier ones are settled. The totals are
// sharded counters (schema.ts relay_counters): a batch adds to one random row of each name.
import type { Sql } from "postgres";
import type { Descriptive, Report } from "../../domain/execution.ts";
import { endpointOf, protocolRelayed, relayBody, relayable, type RelayPolicy } from "../../domain/relay.ts";
import type { RelayStatus } from "../contract/relay.ts";
import type { ResultFor, WriteOp } from "../contract/store.ts";
import { entryOf, type EntryRow } from "../common/relay-entry.ts";

/** A connection inside a transaction (transaction.ts). */
type Tx = Sql;
type Repo = Pick<Descriptive, "repoSource" | "repoSlug"> | null;

/** Rows per counter name; a transaction picks one at random. */
const SHARDS = 16;
/** Rows looked at per statement while making room under the bound. */
const EVICT_CHUNK = 256;

const NAMES = [
  "entries",
  "bytes",
  "sent_total",
  "failed_total",
  "refused_total",
  "dropped_bound_total",
  "discarded_total",
] as const;
type CounterName = (typeof NAMES)[number];

async function totals(sql: Sql | Tx): Promise<Map<string, number>> {
  const rows = await sql<
    { name: string; value: number }[]
  >`SELECT name, sum(value)::bigint AS value FROM relay_counters GROUP BY name`;
  return new Map(rows.map((r) => [r.name, Number(r.value)]));
}

/** The outbox's part of one batch: the policy it relays by, the counter changes it made (added before COMMIT). */
interface RelayBatch {
  policy: RelayPolicy | null;
  deltas: Map<CounterName, number>;
  /** Set when the batch queued an entry: only then can it be past the bound. */
  grew: boolean;
}

function add(r: RelayBatch, name: CounterName, n: number): void {
  if (n !== 0) r.deltas.set(name, (r.deltas.get(name) ?? 0) + n);
}

/** Entries that left the outbox (sent, dropped, deleted): out of the totals. */
function gone(r: RelayBatch, rows: readonly { bytes: number }[]): void {
  for (const { bytes } of rows) {
    add(r, "entries", -1);
    add(r, "bytes", -bytes);
  }
}

async function put(
  r: RelayBatch,
  tx: Tx,
  e: Omit<EntryRow, "id" | "bytes" | "attempts">,
  state: "ready" | "waiting",
): Promise<void> {
  const bytes = Buffer.byteLength(e.body);
  await tx`INSERT INTO relay_outbox (execution_id, random_id, endpoint, body, bytes, queued_at, state)
    VALUES (${e.executionId}, ${e.randomId}, ${e.endpoint}, ${e.body}, ${bytes}, ${e.queuedAt}, ${state})`;
  add(r, "entries", 1);
  add(r, "bytes", bytes);
  r.grew = true;
}

const takeWaiting = (tx: Tx, executionId: string) =>
  tx<EntryRow[]>`DELETE FROM relay_outbox WHERE execution_id = ${executionId} AND state = 'waiting'
    RETURNING id, execution_id AS "executionId", random_id AS "randomId", endpoint, body, bytes, queued_at AS "queuedAt", attempts`;

const entry = (report: Report, omit: readonly string[], at: number) => ({
  executionId: report.executionId,
  randomId: report.randomId,
  endpoint: endpointOf(report),
  body: relayBody(report, omit),
  queuedAt: at,
});

/** A report that changed its execution (`stored`: the execution as it now is) enters the outbox, if relayed. */
async function queue(r: RelayBatch, tx: Tx, report: Report, stored: Repo, at: number): Promise<void> {
  const { policy } = r;
  if (policy === null || !protocolRelayed(policy, report) || !relayable(policy, stored)) return;
  await put(r, tx, entry(report, policy.omit, at), "ready");
}

/** A held final report: its entry waits for the start report (a newer one replaces it). */
async function hold(r: RelayBatch, tx: Tx, report: Report, at: number): Promise<void> {
  const { policy } = r;
  gone(r, await takeWaiting(tx, report.executionId));
  if (
    policy === null ||
    !protocolRelayed(policy, report) ||
    (report.fields !== null && !relayable(policy, report.fields))
  )
    return;
  await put(r, tx, entry(report, policy.omit, at), "waiting");
}

/** The start report came (and was queued): the held report's entry goes after it, if the execution is relayed. */
async function releaseAfterStart(r: RelayBatch, tx: Tx, executionId: string, stored: Repo): Promise<void> {
  for (const e of await takeWaiting(tx, executionId)) {
    gone(r, [e]);
    if (r.policy === null || relayable(r.policy, stored)) await put(r, tx, e, "ready");
  }
}

/** The held report was applied on its own (no start report): its entry is sent as it stands. */
async function releaseAlone(r: RelayBatch, tx: Tx, executionId: string, stored: Repo): Promise<void> {
  if (r.policy === null || relayable(r.policy, stored))
    await tx`UPDATE relay_outbox SET state = 'ready' WHERE execution_id = ${executionId} AND state = 'waiting'`;
  else gone(r, await takeWaiting(tx, executionId));
}

/** An install deleted: the entries of its executions go too (nothing of it leaves the server afterwards). */
async function forget(r: RelayBatch, tx: Tx, executionIds: readonly string[]): Promise<void> {
  if (executionIds.length > 0)
    gone(
      r,
      await tx<
        { bytes: number }[]
      >`DELETE FROM relay_outbox WHERE execution_id = ANY(${executionIds}::text[]) RETURNING bytes`,
    );
}

/** Entries of the executions created in [from, to) (a month that retention drops). */
async function forgetCreated(r: RelayBatch, tx: Tx, from: number, to: number): Promise<void> {
  gone(
    r,
    await tx<{ bytes: number }[]>`DELETE FROM relay_outbox
    WHERE execution_id IN (SELECT execution_id FROM execution_ids WHERE created_at >= ${from} AND created_at < ${to}) RETURNING bytes`,
  );
}

/**
 * Past the bound, the oldest entries not in flight go (counted). Entries another transaction
 * holds are skipped, not waited for; with several nodes writing at once, each sees the others'
 * committed totals only, so the outbox may pass the bound by about one batch per node.
 */
async function trim(r: RelayBatch, tx: Tx, at: number): Promise<void> {
  const { policy } = r;
  if (!r.grew || policy === null) return;
  let bytes = ((await totals(tx)).get("bytes") ?? 0) + (r.deltas.get("bytes") ?? 0);
  while (bytes > policy.maxBytes) {
    const oldest = await tx<{ id: number; bytes: number }[]>`
      SELECT id, bytes FROM relay_outbox WHERE lease_until <= ${at} ORDER BY id LIMIT ${EVICT_CHUNK} FOR UPDATE SKIP LOCKED`;
    if (oldest.length === 0) return;
    const ids: number[] = [];
    for (const row of oldest) {
      if (bytes <= policy.maxBytes) break;
      ids.push(Number(row.id));
      bytes -= row.bytes;
    }
    const dropped = await tx<
      { bytes: number }[]
    >`DELETE FROM relay_outbox WHERE id = ANY(${ids.map(String)}::bigint[]) RETURNING bytes`;
    gone(r, dropped);
    add(r, "dropped_bound_total", dropped.length);
  }
}

async function claim(tx: Tx, op: Extract<WriteOp, { kind: "relay-claim" }>): Promise<ResultFor<typeof op>> {
  const [paused] = await tx<{ value: number }[]>`SELECT value FROM relay_counters WHERE name = 'paused' AND shard = 0`;
  if (Number(paused?.value ?? 0) === 1) return { kind: "claimed", paused: true, entries: [] };
  const rows = await tx<EntryRow[]>`
    WITH picked AS (
      SELECT o.id FROM relay_outbox o
      WHERE o.state = 'ready' AND o.next_at <= ${op.at} AND (o.lease_until <= ${op.at} OR o.lease_owner = ${op.owner})
        AND NOT EXISTS (SELECT 1 FROM relay_outbox p WHERE p.execution_id = o.execution_id AND p.id < o.id AND p.state <> 'refused')
      ORDER BY o.id LIMIT ${op.limit} FOR UPDATE OF o SKIP LOCKED)
    UPDATE relay_outbox r SET lease_owner = ${op.owner}, lease_until = ${op.at + op.leaseMs} FROM picked WHERE r.id = picked.id
    RETURNING r.id, r.execution_id AS "executionId", r.random_id AS "randomId", r.endpoint, r.body, r.bytes, r.queued_at AS "queuedAt", r.attempts`;
  return {
    kind: "claimed",
    paused: false,
    entries: rows
      .map((r) => entryOf({ ...r, id: Number(r.id), queuedAt: Number(r.queuedAt) }))
      .sort((a, b) => a.id - b.id),
  };
}

async function settle(
  r: RelayBatch,
  tx: Tx,
  op: Extract<WriteOp, { kind: "relay-settle" }>,
): Promise<ResultFor<typeof op>> {
  // Sent is sent, whoever holds the lease now (it may have run out while the request was slow).
  const sent =
    op.sent.length === 0
      ? []
      : await tx<
          { bytes: number }[]
        >`DELETE FROM relay_outbox WHERE id = ANY(${op.sent.map(String)}::bigint[]) RETURNING bytes`;
  gone(r, sent);
  const failures = [
    ...op.failed.map((f) => ({ ...f, state: "ready" })),
    ...op.refused.map((f) => ({ ...f, retryAt: 0, state: "refused" })),
  ];
  for (const f of failures) {
    await tx`UPDATE relay_outbox SET attempts = attempts + 1, last_error = ${f.error}, state = ${f.state}, next_at = ${f.retryAt}, lease_owner = NULL, lease_until = 0
      WHERE id = ${f.id} AND lease_owner = ${op.owner}`;
  }
  if (op.released.length > 0) {
    await tx`UPDATE relay_outbox SET lease_owner = NULL, lease_until = 0 WHERE id = ANY(${op.released.map(String)}::bigint[]) AND lease_owner = ${op.owner}`;
  }
  add(r, "sent_total", sent.length);
  add(r, "failed_total", op.failed.length);
  add(r, "refused_total", op.refused.length);
  return { kind: "settled", sent: sent.length };
}

async function control(
  r: RelayBatch,
  tx: Tx,
  op: Extract<WriteOp, { kind: "relay-control" }>,
): Promise<ResultFor<typeof op>> {
  switch (op.action) {
    case "pause":
    case "resume":
      await tx`INSERT INTO relay_counters (name, shard, value) VALUES ('paused', 0, ${op.action === "pause" ? 1 : 0})
        ON CONFLICT (name, shard) DO UPDATE SET value = excluded.value`;
      return { kind: "relay-controlled", entries: 0 };
    case "requeue":
      return {
        kind: "relay-controlled",
        entries: (await tx`UPDATE relay_outbox SET state = 'ready', next_at = 0 WHERE state = 'refused'`).count,
      };
    case "discard":
    case "discard-refused": {
      const rows =
        op.action === "discard"
          ? await tx<{ bytes: number }[]>`DELETE FROM relay_outbox RETURNING bytes`
          : await tx<{ bytes: number }[]>`DELETE FROM relay_outbox WHERE state = 'refused' RETURNING bytes`;
      gone(r, rows);
      add(r, "discarded_total", rows.length);
      return { kind: "relay-controlled", entries: rows.length };
    }
  }
}

/** Adds the batch's counter changes, to one shard of each name (one statement, keys in one order). */
async function flush({ deltas }: RelayBatch, tx: Tx): Promise<void> {
  const names = [...deltas.keys()].sort();
  if (names.length === 0) return;
  const shard = Math.floor(Math.random() * SHARDS);
  await tx`INSERT INTO relay_counters (name, shard, value)
    SELECT name, ${shard}, value FROM unnest(${names}::text[], ${names.map((n) => String(deltas.get(n)!))}::bigint[]) AS d(name, value)
    ON CONFLICT (name, shard) DO UPDATE SET value = relay_counters.value + excluded.value`;
}

/** The outbox's operations for one batch, inside its transaction (writes.ts, intake.ts). */
export function relayBatch(policy: RelayPolicy | null) {
  const r: RelayBatch = { policy, deltas: new Map(), grew: false };
  return {
    queue: (tx: Tx, report: Report, stored: Repo, at: number) => queue(r, tx, report, stored, at),
    hold: (tx: Tx, report: Report, at: number) => hold(r, tx, report, at),
    releaseAfterStart: (tx: Tx, executionId: string, stored: Repo) => releaseAfterStart(r, tx, executionId, stored),
    releaseAlone: (tx: Tx, executionId: string, stored: Repo) => releaseAlone(r, tx, executionId, stored),
    forget: (tx: Tx, executionIds: readonly string[]) => forget(r, tx, executionIds),
    forgetCreated: (tx: Tx, from: number, to: number) => forgetCreated(r, tx, from, to),
    trim: (tx: Tx, at: number) => trim(r, tx, at),
    claim: (tx: Tx, op: Extract<WriteOp, { kind: "relay-claim" }>) => claim(tx, op),
    settle: (tx: Tx, op: Extract<WriteOp, { kind: "relay-settle" }>) => settle(r, tx, op),
    control: (tx: Tx, op: Extract<WriteOp, { kind: "relay-control" }>) => control(r, tx, op),
    flush: (tx: Tx) => flush(r, tx),
  };
}

export async function relayStatus(sql: Sql): Promise<RelayStatus> {
  const c = await totals(sql);
  const notReady = new Map(
    (
      await sql<
        { state: string; n: number }[]
      >`SELECT state, count(*)::int AS n FROM relay_outbox WHERE state <> 'ready' GROUP BY state`
    ).map((r) => [r.state, r.n]),
  );
  const [head] = await sql<{ queuedAt: number; attempts: number; lastError: string | null }[]>`
    SELECT queued_at AS "queuedAt", attempts, last_error AS "lastError" FROM relay_outbox WHERE state = 'ready' ORDER BY id LIMIT 1`;
  const n = (name: string) => c.get(name) ?? 0;
  return {
    paused: n("paused") === 1,
    entries: n("entries"),
    bytes: n("bytes"),
    waiting: notReady.get("waiting") ?? 0,
    refused: notReady.get("refused") ?? 0,
    head: head ? { ...head, queuedAt: Number(head.queuedAt) } : null,
    sent: n("sent_total"),
    failedAttempts: n("failed_total"),
    refusals: n("refused_total"),
    dropped: { bound: n("dropped_bound_total"), discarded: n("discarded_total") },
  };
}
