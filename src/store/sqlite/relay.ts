// The relay's outbox in the SQLite engine (contract/relay.ts Store.setRelay and the relay-* writes): an
// accepted report's entry is written in the transaction that stores the report, taken out by the
// sender's claims and settlements, and kept within its bound, oldest dropped first. The totals
// live in budget_counters (relay.*), changed in the same transactions.
import type { Database } from "bun:sqlite";
import type { Descriptive, Report } from "../../domain/execution.ts";
import type { Endpoint } from "../../domain/rejection.ts";
import { endpointOf, protocolRelayed, relayBody, relayable, type RelayPolicy } from "../../domain/relay.ts";
import type { RelayStatus } from "../contract/relay.ts";
import type { ResultFor, WriteOp } from "../contract/store.ts";
import type { Counters } from "./budgets.ts";
import { entryOf, type EntryRow } from "../common/relay-entry.ts";

type Repo = Pick<Descriptive, "repoSource" | "repoSlug"> | null;

const COLUMNS = `id, execution_id AS executionId, random_id AS randomId, endpoint, body, bytes, queued_at AS queuedAt, attempts`;
/** Rows looked at per statement while making room under the bound. */
const EVICT_CHUNK = 256;

function prepareRelayStatements(sqlite: Database) {
  return {
    insert: sqlite.query<never, [string, string, string, string, number, number, string]>(
      "INSERT INTO relay_outbox (execution_id, random_id, endpoint, body, bytes, queued_at, state) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ),
    takeWaiting: sqlite.query<EntryRow, [string]>(
      `DELETE FROM relay_outbox WHERE execution_id = ? AND state = 'waiting' RETURNING ${COLUMNS}`,
    ),
    readyInPlace: sqlite.query<never, [string]>(
      "UPDATE relay_outbox SET state = 'ready' WHERE execution_id = ? AND state = 'waiting'",
    ),
    forget: sqlite.query<{ bytes: number }, [string]>(
      "DELETE FROM relay_outbox WHERE execution_id = ? RETURNING bytes",
    ),
    oldest: sqlite.query<{ id: number; bytes: number }, [number, number]>(
      "SELECT id, bytes FROM relay_outbox WHERE lease_until <= ? ORDER BY id LIMIT ?",
    ),
    deleteId: sqlite.query<{ bytes: number }, [number]>("DELETE FROM relay_outbox WHERE id = ? RETURNING bytes"),
    // One server per file (the serve lock): every lease is its own, so none is skipped.
    claim: sqlite.query<EntryRow, { $owner: string; $at: number; $until: number; $limit: number }>(
      `UPDATE relay_outbox SET lease_owner = $owner, lease_until = $until WHERE id IN (
         SELECT o.id FROM relay_outbox o WHERE o.state = 'ready' AND o.next_at <= $at
           AND NOT EXISTS (SELECT 1 FROM relay_outbox p WHERE p.execution_id = o.execution_id AND p.id < o.id AND p.state <> 'refused')
         ORDER BY o.id LIMIT $limit)
       RETURNING ${COLUMNS}`,
    ),
    sent: sqlite.query<{ bytes: number }, [number, string]>(
      "DELETE FROM relay_outbox WHERE id = ? AND lease_owner = ? RETURNING bytes",
    ),
    failed: sqlite.query<never, [string, string, number, number, string]>(
      "UPDATE relay_outbox SET attempts = attempts + 1, last_error = ?, state = ?, next_at = ?, lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ?",
    ),
    release: sqlite.query<never, [number, string]>(
      "UPDATE relay_outbox SET lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ?",
    ),
    requeue: sqlite.query<never, []>("UPDATE relay_outbox SET state = 'ready', next_at = 0 WHERE state = 'refused'"),
    discard: sqlite.query<{ bytes: number }, []>("DELETE FROM relay_outbox RETURNING bytes"),
    discardRefused: sqlite.query<{ bytes: number }, []>(
      "DELETE FROM relay_outbox WHERE state = 'refused' RETURNING bytes",
    ),
    notReady: sqlite.query<{ state: string; n: number }, []>(
      "SELECT state, count(*) AS n FROM relay_outbox WHERE state <> 'ready' GROUP BY state",
    ),
    head: sqlite.query<{ queuedAt: number; attempts: number; lastError: string | null }, []>(
      "SELECT queued_at AS queuedAt, attempts, last_error AS lastError FROM relay_outbox WHERE state = 'ready' ORDER BY id LIMIT 1",
    ),
  };
}

/** The outbox of one connection: its statements, the budgets' counters, the policy as set. */
interface RelayContext {
  q: ReturnType<typeof prepareRelayStatements>;
  counters: Counters;
  policy: { current: RelayPolicy | null };
  /** Set when this transaction queued an entry: only then can it be past the bound. */
  grew: boolean;
}

/** Entries that left the outbox (sent, dropped, deleted): out of the totals. */
function gone({ counters }: RelayContext, rows: readonly { bytes: number }[]): void {
  for (const { bytes } of rows) {
    counters.add("relay.entries", -1);
    counters.add("relay.bytes", -bytes);
  }
}

function put(
  r: RelayContext,
  executionId: string,
  randomId: string,
  endpoint: Endpoint,
  body: string,
  queuedAt: number,
  state: "ready" | "waiting",
): void {
  const bytes = Buffer.byteLength(body);
  r.grew = true;
  r.q.insert.run(executionId, randomId, endpoint, body, bytes, queuedAt, state);
  r.counters.add("relay.entries", 1);
  r.counters.add("relay.bytes", bytes);
}

/** A report that changed its execution (`stored`: the execution as it now is) enters the outbox, if relayed. */
function queue(r: RelayContext, report: Report, stored: Repo, at: number): void {
  const p = r.policy.current;
  if (p === null || !protocolRelayed(p, report) || !relayable(p, stored)) return;
  put(r, report.executionId, report.randomId, endpointOf(report), relayBody(report, p.omit), at, "ready");
}

/** A held final report: its entry waits for the start report (a newer one replaces it). */
function hold(r: RelayContext, report: Report, at: number): void {
  const p = r.policy.current;
  gone(r, r.q.takeWaiting.all(report.executionId));
  // An /upload status update names no repository: its start report's decides when it comes.
  if (p === null || !protocolRelayed(p, report) || (report.fields !== null && !relayable(p, report.fields))) return;
  put(r, report.executionId, report.randomId, endpointOf(report), relayBody(report, p.omit), at, "waiting");
}

/** The start report came (and was queued): the held report's entry goes after it, if the execution is relayed. */
function releaseAfterStart(r: RelayContext, executionId: string, stored: Repo): void {
  const p = r.policy.current;
  for (const e of r.q.takeWaiting.all(executionId)) {
    gone(r, [e]);
    if (p === null || relayable(p, stored)) put(r, e.executionId, e.randomId, e.endpoint, e.body, e.queuedAt, "ready");
  }
}

/** The held report was applied on its own (no start report): its entry is sent as it stands. */
function releaseAlone(r: RelayContext, executionId: string, stored: Repo): void {
  const p = r.policy.current;
  if (p === null || relayable(p, stored)) r.q.readyInPlace.run(executionId);
  else gone(r, r.q.takeWaiting.all(executionId));
}

/** An install deleted: the entries of its executions go too (nothing of it leaves the server afterwards). */
function forget(r: RelayContext, executionIds: readonly string[]): void {
  for (const id of executionIds) gone(r, r.q.forget.all(id));
}

/** Past the bound, the oldest entries not in flight go, until it fits (counted). */
function trim(r: RelayContext, at: number): void {
  const p = r.policy.current;
  if (!r.grew || p === null) return;
  r.grew = false;
  const { counters } = r;
  while (counters.get("relay.bytes") > p.maxBytes) {
    const oldest = r.q.oldest.all(at, EVICT_CHUNK);
    if (oldest.length === 0) return;
    for (const { id } of oldest) {
      if (counters.get("relay.bytes") <= p.maxBytes) return;
      const dropped = r.q.deleteId.all(id);
      gone(r, dropped);
      counters.add("relay.dropped_bound_total", dropped.length);
    }
  }
}

function claim({ q, counters }: RelayContext, op: Extract<WriteOp, { kind: "relay-claim" }>): ResultFor<typeof op> {
  if (counters.get("relay.paused") === 1) return { kind: "claimed", paused: true, entries: [] };
  const rows = q.claim.all({ $owner: op.owner, $at: op.at, $until: op.at + op.leaseMs, $limit: op.limit });
  return { kind: "claimed", paused: false, entries: rows.sort((a, b) => a.id - b.id).map(entryOf) };
}

function settle(r: RelayContext, op: Extract<WriteOp, { kind: "relay-settle" }>): ResultFor<typeof op> {
  const { q, counters } = r;
  let sent = 0;
  for (const id of op.sent) {
    const rows = q.sent.all(id, op.owner);
    gone(r, rows);
    sent += rows.length;
  }
  for (const f of op.failed) q.failed.run(f.error, "ready", f.retryAt, f.id, op.owner);
  for (const f of op.refused) q.failed.run(f.error, "refused", 0, f.id, op.owner);
  for (const id of op.released) q.release.run(id, op.owner);
  counters.add("relay.sent_total", sent);
  counters.add("relay.failed_total", op.failed.length);
  counters.add("relay.refused_total", op.refused.length);
  return { kind: "settled", sent };
}

function control(r: RelayContext, op: Extract<WriteOp, { kind: "relay-control" }>): ResultFor<typeof op> {
  const { q, counters } = r;
  switch (op.action) {
    case "pause":
    case "resume":
      counters.add("relay.paused", (op.action === "pause" ? 1 : 0) - counters.get("relay.paused"));
      return { kind: "relay-controlled", entries: 0 };
    case "requeue":
      return { kind: "relay-controlled", entries: q.requeue.run().changes };
    case "discard":
    case "discard-refused": {
      const rows = (op.action === "discard" ? q.discard : q.discardRefused).all();
      gone(r, rows);
      counters.add("relay.discarded_total", rows.length);
      return { kind: "relay-controlled", entries: rows.length };
    }
  }
}

/** Outside a transaction: the totals as committed. */
function status({ q, counters }: RelayContext): RelayStatus {
  const c = counters.all();
  const notReady = new Map(q.notReady.all().map((r) => [r.state, r.n]));
  return {
    paused: c["relay.paused"] === 1,
    entries: c["relay.entries"],
    bytes: c["relay.bytes"],
    waiting: notReady.get("waiting") ?? 0,
    refused: notReady.get("refused") ?? 0,
    head: q.head.get() ?? null,
    sent: c["relay.sent_total"],
    failedAttempts: c["relay.failed_total"],
    refusals: c["relay.refused_total"],
    dropped: { bound: c["relay.dropped_bound_total"], discarded: c["relay.discarded_total"] },
  };
}

/** The outbox's operations, synchronous inside the caller's transaction (writes.ts) but for status. */
export function createSqliteRelay(sqlite: Database, counters: Counters, policy: { current: RelayPolicy | null }) {
  const r: RelayContext = { q: prepareRelayStatements(sqlite), counters, policy, grew: false };
  return {
    queue: (report: Report, stored: Repo, at: number) => queue(r, report, stored, at),
    hold: (report: Report, at: number) => hold(r, report, at),
    releaseAfterStart: (executionId: string, stored: Repo) => releaseAfterStart(r, executionId, stored),
    releaseAlone: (executionId: string, stored: Repo) => releaseAlone(r, executionId, stored),
    forget: (executionIds: readonly string[]) => forget(r, executionIds),
    trim: (at: number) => trim(r, at),
    claim: (op: Extract<WriteOp, { kind: "relay-claim" }>) => claim(r, op),
    settle: (op: Extract<WriteOp, { kind: "relay-settle" }>) => settle(r, op),
    control: (op: Extract<WriteOp, { kind: "relay-control" }>) => control(r, op),
    status: () => status(r),
  };
}
