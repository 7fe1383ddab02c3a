// Reads from a streaming replica while it keeps up (docs/decisions/2026-11-25-postgresql-engine.md): its replay lag is measured every second; past the bound, or when it does not answer,
// reads go to the primary until it is back within it.
import type { Sql } from "postgres";
import { openPostgres, redacted, type PgDb } from "./database.ts";
import type { OpenOptions } from "../engine.ts";

const EVERY_MS = 1000;

export interface Replica {
  sql: Sql;
  db: PgDb;
  /** Whether reads should go to the replica now. */
  usable(): boolean;
  status(): { location: string; lagS: number | null; readsFrom: "replica" | "primary"; problem: string | null };
  close(): Promise<void>;
}

export async function openReplica(url: string, maxLagMs: number, opts: OpenOptions): Promise<Replica> {
  const { sql, db } = await openPostgres(url, { ...opts, migrate: false });
  let lagS: number | null = null;
  let problem: string | null = null;
  async function measure(): Promise<void> {
    try {
      // Caught up (everything received is replayed): no lag, however long ago the last write was.
      const [row] = await sql<{ standby: boolean; lag: number | null }[]>`
        SELECT pg_is_in_recovery() AS standby,
          CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
               ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 END AS lag`;
      lagS = row!.standby ? Math.max(0, row!.lag ?? 0) : 0;
      problem = !row!.standby
        ? null
        : lagS * 1000 > maxLagMs
          ? `replica ${lagS.toFixed(1)} s behind (bound ${maxLagMs / 1000} s): reads go to the primary`
          : null;
    } catch (e) {
      lagS = null;
      problem = `replica does not answer (${(e as Error).message}): reads go to the primary`;
    }
  }
  await measure();
  let stopped = false;
  const timer = setInterval(() => void measure(), EVERY_MS);
  timer.unref?.();
  return {
    sql,
    db,
    usable: () => !stopped && problem === null && lagS !== null,
    status: () => ({
      location: redacted(url),
      lagS,
      readsFrom: problem === null && lagS !== null ? "replica" : "primary",
      problem,
    }),
    async close() {
      stopped = true;
      clearInterval(timer);
      await sql.end({ timeout: 1 });
    },
  };
}
