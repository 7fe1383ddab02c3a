// The PostgreSQL engine: a Store over one database that any number of nodes share
// (docs/decisions.md, "The PostgreSQL engine: design").
import type { Sql } from "postgres";
import { failureSignatureId } from "../../domain/error-signature.ts";
import { DAY } from "../../domain/time.ts";
import { RollupDeltas } from "../../domain/rollup.ts";
import { StorageUnavailableError, type BudgetStatus, type Store, type StoreLimits, type StoreReads, type WriteOp } from "../contract.ts";
import type { Engine, OpenOptions } from "../engine.ts";
import { openPostgres, redacted, type PgDb } from "./database.ts";
import { createPostgresReads } from "./reads.ts";
import { Partitions } from "./partitions.ts";
import { openReplica, type Replica } from "./replica.ts";
import { MARKS } from "./intake.ts";
import { addRollups } from "./cells.ts";
import { getMark, writeBatch } from "./writes.ts";

/** The advisory lock key of a scheduled job (a string: postgres.js sends bigint parameters as text). */
const jobKey = (name: string): string => String(BigInt.asIntN(64, BigInt(Bun.hash.wyhash(`job:${name}`, 0n))));

/** SQLSTATE classes that mean the server cannot take the write now (connection, resources, shutdown). */
const UNAVAILABLE = /^(08|53|57)/;

/** The read API's reads, from the replica while it is usable, else from the primary; maintenance reads stay on the primary. */
function routed(primary: StoreReads, replica: { reads: StoreReads; usable: () => boolean } | null): StoreReads {
  const via = (): StoreReads => (replica?.usable() ? replica.reads : primary);
  return {
    getExecutions: (randomId) => via().getExecutions(randomId),
    listExecutions: (filter, page) => via().listExecutions(filter, page),
    newestOfApps: (apps) => via().newestOfApps(apps),
    pageExecutions: (filter, page) => via().pageExecutions(filter, page),
    executionChunks: (filter, page) => via().executionChunks(filter, page),
    iterateExecutions: (filter) => via().iterateExecutions(filter),
    errorTextCounts: () => via().errorTextCounts(),
    changeMarker: () => via().changeMarker(),
    readRollups: (selection) => via().readRollups(selection),
    rollupCells: (grain, from, to) => via().rollupCells(grain, from, to),
    foldedUntil: () => via().foldedUntil(),
    signatures: (ids) => via().signatures(ids),
    recordSpan: () => via().recordSpan(),
  };
}

function storeOf(pg: Sql, db: PgDb, location: string, replica: Replica | null): Store {
  const reads = createPostgresReads(pg, db);
  const fromReplica = replica ? { reads: createPostgresReads(replica.sql, replica.db), usable: replica.usable } : null;
  let limits: StoreLimits = { logBytes: 64 * 1024 * 1024, heldBytes: 16 * 1024 * 1024 };
  const partitions = new Partitions(pg);
  return {
    ...reads,
    ...routed(reads, fromReplica),
    async write(ops: readonly WriteOp[]) {
      try {
        return await writeBatch(pg, ops, partitions);
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (typeof code === "string" && (UNAVAILABLE.test(code) || code === "ECONNREFUSED" || code === "CONNECTION_CLOSED" || code === "CONNECTION_ENDED")) {
          throw new StorageUnavailableError(`PostgreSQL at ${redacted(location)}: ${(e as Error).message}`);
        }
        throw e;
      }
    },
    async rebuildRollups(onDay) {
      const span = await reads.recordSpan();
      await pg`TRUNCATE rollup_cells`;
      if (!span) return;
      const foldedUntil = await getMark(pg, MARKS.foldedUntil);
      const end = span.last + 1;
      for (let day = span.first - (span.first % DAY); day < end; day += DAY) {
        const deltas = new RollupDeltas(foldedUntil);
        for await (const r of reads.iterateExecutions({ from: day, to: day + DAY })) deltas.add(r, r.outcome, 1, failureSignatureId(r.outcome, r.error));
        await pg.begin((tx) => addRollups(tx, [...deltas.cells.values(), ...deltas.openCells().values()]));
        onDay?.(day, end);
      }
    },
    setLimits(next: StoreLimits) {
      limits = next;
    },
    async leaseJob(name, everyMs, at, fn) {
      // A session-level advisory lock on one connection says who runs the job now; the time of
      // its last run, in `marks`, says whether it is due. Another node skips, it does not wait.
      const session = await pg.reserve();
      const key = jobKey(name);
      try {
        const [got] = await session<{ ok: boolean }[]>`SELECT pg_try_advisory_lock(${key}::bigint) AS ok`;
        if (!got?.ok) return null;
        try {
          const last = await getMark(session, `job:${name}`);
          if (last > 0 && at - last < everyMs) return null;
          const result = await fn();
          await session`INSERT INTO marks (name, value) VALUES (${`job:${name}`}, ${at}) ON CONFLICT (name) DO UPDATE SET value = excluded.value`;
          return result;
        } finally {
          await session`SELECT pg_advisory_unlock(${key}::bigint)`;
        }
      } finally {
        session.release();
      }
    },
    async budgets(): Promise<BudgetStatus> {
      const [log] = await pg<{ used: number; entries: number; bodies: number; head: number }[]>`
        SELECT coalesce(sum(cost), 0)::bigint AS used, count(*)::int AS entries, coalesce(sum(body_size), 0)::bigint AS bodies,
          count(*) FILTER (WHERE body_store = 'head')::int AS head FROM rejected_reports`;
      const [held] = await pg<{ used: number; count: number }[]>`SELECT coalesce(sum(cost), 0)::bigint AS used, count(*)::int AS count FROM held_reports`;
      const counters = new Map((await pg<{ name: string; value: number }[]>`SELECT name, value FROM budget_counters`).map((c) => [c.name, c.value]));
      return {
        log: {
          limitBytes: limits.logBytes, usedBytes: log!.used, entries: log!.entries, bodyBytes: log!.bodies, bodyRawBytes: log!.bodies, headOnly: log!.head,
          deduplicated: 0, truncated: 0, evicted: 0, dropped: 0, droppedBytes: 0,
        },
        held: { limitBytes: limits.heldBytes, usedBytes: held!.used, count: held!.count, expired: counters.get("held.expired_total") ?? 0, overflowed: counters.get("held.overflowed_total") ?? 0 },
      };
    },
    async close() {
      await replica?.close();
      await pg.end({ timeout: 5 });
    },
  };
}

export async function openPostgresEngine(location: string, opts: OpenOptions): Promise<Engine> {
  const { sql: pg, db } = await openPostgres(location, opts);
  let replica: Replica | null = null;
  try {
    if (opts.readReplica) replica = await openReplica(opts.readReplica.url, opts.readReplica.maxLagMs, opts.durability);
  } catch (e) {
    await pg.end({ timeout: 1 });
    throw e;
  }
  const store = storeOf(pg, db, location, replica);
  return {
    store,
    location: redacted(location),
    serve: () => ({ commit: (ops) => store.write(ops), stop: async () => {} }),
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
      return { writable: budgets !== null, problems, integrity: null, budgets, database: { engine: "postgres", location: redacted(location), replica: replicaStatus } };
    },
    close: () => store.close(),
  };
}
