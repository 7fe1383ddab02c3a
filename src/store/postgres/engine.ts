// The PostgreSQL engine: a Store over one database that any number of nodes share
// (docs/decisions/2026-11-25-postgresql-engine.md).
import type { Sql } from "postgres";
import { failureSignatureId } from "../../domain/error-signature.ts";
import { DAY } from "../../domain/time.ts";
import { ROLLUP_VERSION, RollupDeltas, storedSlicesOf } from "../../domain/rollup.ts";
import { StorageUnavailableError, StorageUnreachableError } from "../contract/errors.ts";
import { EXECUTION_READS, type ExecutionReads } from "../contract/executions.ts";
import type { StoreLimits } from "../contract/maintenance.ts";
import { READS, type AllReads, type Store, type WriteOp } from "../contract/store.ts";
import { DatabaseOpenError, type Engine, type OpenOptions } from "../engine.ts";
import { openPostgres, redacted, withPoolerHint, type PgDb } from "./database.ts";
import { createPostgresReads } from "./reads.ts";
import { createAlertReads } from "./alerts.ts";
import { createIssueReads } from "./issues.ts";
import { Partitions } from "./partitions.ts";
import { openReplica, type Replica } from "./replica.ts";
import { DEFAULT_LIMITS, budgetStatus } from "../common/budgets.ts";
import { guardReads, type Door } from "../common/door.ts";
import { rebuildDays } from "../common/rebuild.ts";
import { committedCounters } from "./budgets.ts";
import { boundedWhileDown, connectionLost, markDown, transaction } from "./transaction.ts";
import { MARKS } from "./intake.ts";
import { PgLabels, mergeCells } from "./cells.ts";
import { DeltaFolder } from "./fold.ts";
import { getMark, writeBatch } from "./writes.ts";
import { relayStatus } from "./relay.ts";
import type { RelayPolicy } from "../../domain/relay.ts";

/** The advisory lock key of a scheduled job (a string: postgres.js sends bigint parameters as text). */
const jobKey = (name: string): string => String(BigInt.asIntN(64, BigInt(Bun.hash.wyhash(`job:${name}`, 0n))));

/**
 * SQLSTATE classes that mean the server cannot take the write now: connection (08), resources
 * (53), shutdown (57), a transaction rolled back by the server (40: deadlock, serialization; the
 * batch's lock order makes these not happen, and if one did, the batch is safe to send again).
 */
const UNAVAILABLE = /^(08|53|57|40)/;

/**
 * Why the server could not answer now (nothing was written: the client may send it again), or
 * null for anything else (a bug). A failover shows as a lost connection, a server shutting down,
 * no server answering, or a standby that cannot write yet.
 */
function unavailable(e: unknown): string | null {
  const code = (e as { code?: string }).code;
  const message = (e as Error).message;
  if (typeof code !== "string") return null;
  if (code === "26000") return withPoolerHint(e, message);
  if (code === "25006")
    return `${message} (a standby: during a failover, or target_session_attrs=primary is missing from the URL)`;
  return UNAVAILABLE.test(code) || connectionLost(e) ? message : null;
}

/** `e` as the contract says it: the server cannot answer now (503), it cannot be reached at all, or as it is (a bug). */
function refusal(e: unknown, location: string): unknown {
  const why = unavailable(e);
  if (why === null) return e;
  const message = `PostgreSQL at ${redacted(location)}: ${why}`;
  if (!connectionLost(e)) return new StorageUnavailableError(message);
  markDown();
  return new StorageUnreachableError(message);
}

/** A server that cannot answer now turned into StorageUnavailableError (503, not 500); no read waits out a whole failover. */
function door(location: string): Door {
  return { translate: (e) => refusal(e, location), bound: boundedWhileDown };
}

/** The read API's reads (the executions feature's), from the replica while it is usable, else from the primary; the others stay on the primary. */
function routed(
  primary: ExecutionReads,
  replica: { reads: ExecutionReads; usable: () => boolean } | null,
): ExecutionReads {
  const via = (): ExecutionReads => (replica?.usable() ? replica.reads : primary);
  const names = Object.keys(EXECUTION_READS) as (keyof ExecutionReads)[];
  return Object.fromEntries(
    names.map((name) => [name, (...args: unknown[]) => (via()[name] as (...a: unknown[]) => unknown)(...args)]),
  ) as unknown as ExecutionReads;
}

function storeOf(
  pg: Sql,
  db: PgDb,
  location: string,
  replica: Replica | null,
  labels: PgLabels,
  folder: DeltaFolder,
): Store {
  let limits: StoreLimits = DEFAULT_LIMITS;
  let relay: RelayPolicy | null = null;
  const partitions = new Partitions(pg);
  // Alerts, issue links, the budgets and the outbox read on the primary: what they decide is written there.
  const reads = guardReads<AllReads>(
    {
      ...createPostgresReads(pg, db, labels),
      ...createAlertReads(pg),
      ...createIssueReads(pg),
      relayStatus: () => relayStatus(pg),
      budgets: async () => budgetStatus(await committedCounters(pg), limits),
    },
    READS,
    door(location),
  );
  const fromReplica = replica
    ? {
        reads: guardReads<ExecutionReads>(
          createPostgresReads(replica.sql, replica.db),
          EXECUTION_READS,
          door(replica.status().location),
        ),
        usable: replica.usable,
      }
    : null;
  return {
    ...reads,
    ...routed(reads, fromReplica),
    async write(ops: readonly WriteOp[]) {
      try {
        const results = await writeBatch(pg, ops, {
          limits,
          relay,
          partitions,
          labels,
        });
        folder.poke();
        return results;
      } catch (e) {
        throw refusal(e, location);
      }
    },
    async rebuildRollups(onDay) {
      const span = await reads.recordSpan();
      await pg`TRUNCATE rollup_cells, rollup_deltas`;
      if (!span) return;
      const foldedUntil = await getMark(pg, MARKS.foldedUntil);
      for (const day of rebuildDays(span, onDay)) {
        const deltas = new RollupDeltas(foldedUntil, storedSlicesOf);
        for await (const r of reads.iterateExecutions({
          from: day,
          to: day + DAY,
        }))
          deltas.add(r, r.outcome, 1, failureSignatureId(r.outcome, r.error));
        const batch = labels.batch();
        await transaction(pg, (tx) =>
          mergeCells(tx, batch, [...deltas.cells.values(), ...deltas.openCells().values()]),
        );
        batch.commit();
      }
    },
    setLimits(next: StoreLimits) {
      limits = next;
    },
    setRelay(policy) {
      relay = policy;
    },
    async leaseJob(name, everyMs, at, fn) {
      // A transaction holds a transaction-level advisory lock on the job's key while it runs: the
      // lock says who runs it now (the others skip, they do not wait), the time of its last run in
      // `marks` whether it is due, written in the same transaction. A node that dies mid-round
      // loses its connection, the server ends the transaction: the lock goes, the job stays due.
      // Unlike a session-level lock, this holds through a pooler in transaction mode.
      let ran = false;
      let result: Awaited<ReturnType<typeof fn>> | null = null;
      await transaction(pg, async (tx) => {
        const [got] = await tx<{ ok: boolean }[]>`SELECT pg_try_advisory_xact_lock(${jobKey(name)}::bigint) AS ok`;
        if (!got?.ok) return;
        const last = await getMark(tx, `job:${name}`);
        if (last > 0 && at - last < everyMs) return;
        result = await fn();
        ran = true;
        await tx`INSERT INTO marks (name, value) VALUES (${`job:${name}`}, ${at}) ON CONFLICT (name) DO UPDATE SET value = excluded.value`;
      });
      return ran ? result : null;
    },
    async close() {
      await folder.close();
      await replica?.close();
      await pg.end({ timeout: 5 });
    },
  };
}

/**
 * Rollup cells count what ROLLUP_VERSION says (how they are stored included); cells of an older
 * version (a rule changed, a migration moved executions or dropped the old cells) are recounted
 * from the records before this node serves. One node does it: the others wait for the lock and
 * find the mark current. Nodes of the older release must be stopped first (as for any upgrade
 * whose rules changed): they would go on counting the old way.
 */
async function upgradeRollups(pg: Sql, store: Store): Promise<void> {
  if ((await getMark(pg, MARKS.rollupVersion)) >= ROLLUP_VERSION) return;
  await transaction(pg, async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${jobKey("rollup-upgrade")}::bigint)`;
    if ((await getMark(tx, MARKS.rollupVersion)) >= ROLLUP_VERSION) return;
    await store.rebuildRollups();
    await tx`INSERT INTO marks (name, value) VALUES (${MARKS.rollupVersion}, ${ROLLUP_VERSION}) ON CONFLICT (name) DO UPDATE SET value = excluded.value`;
  });
}

export async function openPostgresEngine(location: string, opts: OpenOptions): Promise<Engine> {
  const { sql: pg, db } = await openPostgres(location, opts);
  let replica: Replica | null = null;
  let store: Store;
  const labels = new PgLabels(pg);
  const folder = new DeltaFolder(pg, labels);
  try {
    if (opts.readReplica) replica = await openReplica(opts.readReplica.url, opts.readReplica.maxLagMs, opts);
    store = storeOf(pg, db, location, replica, labels, folder);
    if (opts.migrate) await upgradeRollups(pg, store);
  } catch (e) {
    await replica?.close();
    await pg.end({ timeout: 1 });
    // A server that cannot answer while this node starts: one line naming why, not a bug's.
    const why = unavailable(e);
    throw why === null ? e : new DatabaseOpenError(`PostgreSQL at ${redacted(location)}: ${why}`);
  }
  return {
    store,
    location: redacted(location),
    serve({ log }) {
      folder.serve(log); // deltas a node left behind (it stopped before its fold) are folded by the next to serve
      return { commit: (ops) => store.write(ops), stop: async () => {} };
    },
    async sizes() {
      const [row] = await pg<{ bytes: number }[]>`SELECT pg_database_size(current_database())::bigint AS bytes`;
      return [{ file: "database", bytes: row?.bytes ?? 0 }];
    },
    // The server keeps its own pages checked (checksums, WAL); the engine has nothing to add yet.
    checkIntegrity: async () => ["ok"],
    async health() {
      const budgets = await store.budgets().catch(() => null);
      const replicaStatus = replica?.status() ?? null;
      // A replica behind or away is no problem of this node's (its reads go to the primary): it is
      // reported with the replica, and /healthz stays ok for the load balancer.
      const problems = budgets === null ? ["PostgreSQL does not answer"] : [];
      return {
        writable: budgets !== null,
        problems,
        integrity: null,
        budgets,
        database: {
          engine: "postgres",
          location: redacted(location),
          replica: replicaStatus,
        },
      };
    },
    close: () => store.close(),
  };
}
