// One transaction on one connection, its COMMIT checked, safe when the connection dies under it.
//
// - PostgreSQL answers COMMIT of a transaction that failed along the way with ROLLBACK, not an
//   error, and postgres.js's own `begin` does not look. Behind a pooler in transaction mode with
//   prepared statements on, a COMMIT that met another server connection failed, was sent again,
//   and "succeeded" as ROLLBACK: 3 of 63 acknowledged writes were not stored (docs/decisions/2026-11-26-pgbouncer.md).
//   Here BEGIN, COMMIT and ROLLBACK go in the simple protocol (nothing prepared to lose) and a
//   COMMIT answered ROLLBACK is an error, so nothing is acknowledged that was not committed.
// - When the connection is lost (the server stopped, a failover), postgres.js 3.4 puts a released
//   connection back into its pool even if its socket is gone, and the next statement on it ends
//   the process (a TypeError in a timer): measured in the failover test, a node died. So after a
//   connection error nothing more is sent on it and it is not released: postgres.js has already
//   moved it to its closed connections, to be opened afresh.
import type { Sql } from "postgres";

/** The transaction was rolled back by the server although nothing failed before COMMIT. */
export class RolledBackError extends Error {
  readonly code = "40000"; // SQLSTATE transaction_rollback: the write may be sent again
  constructor() {
    super("the server rolled the transaction back at COMMIT (it had failed along the way); nothing was written");
    this.name = "RolledBackError";
  }
}

/**
 * How long the servers may stay silent while a transaction waits for a connection. While no server
 * takes writes (a failover: the old primary gone, the new one not promoted yet) postgres.js tries
 * the URL's hosts again and again and a write would wait for the whole switch; the clients give up
 * after 5 s (curl -m 5), so the write is refused (503 with Retry-After) after this instead.
 * Measured: before, answers took up to 3.2 s during a 3.25 s switch, and would take as long as any
 * switch. A wait only for a busy pool (every connection in a transaction the servers keep
 * answering) goes on: refusing it as a failover failed 1 of 3 runs of the suite in parallel
 * (docs/decisions/2026-11-28-busy-pool-is-not-a-failover.md).
 */
const CONNECTION_WAIT_MS = 3000;
/**
 * Once a connection was lost or did not come, the next batches wait this long only, for
 * DOWN_FOR_MS: the writer sends one batch at a time, and reports queued behind a batch that waits
 * would wait out every batch before theirs. The first connection that comes ends it.
 */
const DOWN_WAIT_MS = 500;
const DOWN_FOR_MS = 10_000;

/** No connection came in time. */
class ConnectionWaitError extends Error {
  readonly code = "CONNECT_TIMEOUT";
  constructor(ms: number) {
    super(`no connection to a server that takes writes: none answered for ${ms / 1000} s`);
  }
}

/** When a connection was last lost or did not come (per process: every store of it shares the servers). */
let downSince = 0;
/** When a server last answered a transaction of each client: a connection came, a statement was answered. */
const heardAt = new WeakMap<Sql, number>();
/** Reads in flight, told when the servers are found unreachable. */
const onDown = new Set<() => void>();

/** The servers were found unreachable: reads in flight and batches from now on wait less. */
export function markDown(): void {
  downSince = Date.now();
  for (const arm of onDown) arm();
}

/**
 * While the servers are found unreachable, reads give up instead of waiting for the whole switch:
 * one in flight CONNECTION_WAIT_MS after it started (DOWN_WAIT_MS after the finding at least), one
 * starting then after DOWN_WAIT_MS, as a batch does. An answer of several reads in a row (the
 * summary: the fold mark, then the cells) so comes within the clients' 5 s (docs/decisions/2026-11-26-postgresql-failover.md). Other reads are left alone (a scan may take long: the read budget bounds it).
 */
export function boundedWhileDown<T>(read: Promise<T>): Promise<T> {
  const started = Date.now();
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (settle: () => void) => {
      onDown.delete(found);
      clearTimeout(timer);
      settle();
    };
    const arm = (ms: number): void => {
      timer ??= setTimeout(() => finish(() => reject(new ConnectionWaitError(ms))), ms);
    };
    function found(): void {
      arm(Math.max(DOWN_WAIT_MS, CONNECTION_WAIT_MS - (Date.now() - started)));
    }
    if (Date.now() - downSince < DOWN_FOR_MS) arm(DOWN_WAIT_MS);
    else onDown.add(found);
    read.then(
      (value) => finish(() => resolve(value)),
      (e: unknown) => finish(() => reject(e)),
    );
  });
}

/**
 * A reserved connection, or ConnectionWaitError once the servers answered none of this client's
 * transactions for the wait (not once this one waited that long: the pool's queue is first come,
 * first served, so a busy pool answers in the end); one that comes too late goes back to the pool.
 */
async function reserve(sql: Sql): Promise<Awaited<ReturnType<Sql["reserve"]>>> {
  const pending = sql.reserve();
  const ms = Date.now() - downSince < DOWN_FOR_MS ? DOWN_WAIT_MS : CONNECTION_WAIT_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const tx = await Promise.race([
      pending,
      new Promise<never>((_, reject) => {
        const check = (): void => {
          const silent = Date.now() - (heardAt.get(sql) ?? 0);
          if (silent >= ms) reject(new ConnectionWaitError(ms));
          else timer = setTimeout(check, ms - silent);
        };
        timer = setTimeout(check, ms);
      }),
    ]);
    downSince = 0;
    heardAt.set(sql, Date.now());
    return tx;
  } catch (e) {
    markDown();
    pending.then(
      (late) => late.release(),
      () => {},
    );
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether `e` means the connection is gone: postgres.js's own connection errors, a socket error,
 * or the server's FATAL (it ends the session: shutdown, termination, failover).
 */
export function connectionLost(e: unknown): boolean {
  const { code, severity } = e as { code?: unknown; severity?: unknown };
  if (severity === "FATAL" || severity === "PANIC") return true;
  return typeof code === "string" && (/^CONNECT(ION)?_/.test(code) || /^E[A-Z]+$/.test(code));
}

export async function transaction<T>(sql: Sql, fn: (tx: Sql) => Promise<T>): Promise<T> {
  const tx = await reserve(sql);
  let usable = true;
  const step = async <R>(p: Promise<R>): Promise<R> => {
    try {
      const answer = await p;
      heardAt.set(sql, Date.now());
      return answer;
    } catch (e) {
      if (connectionLost(e)) {
        usable = false;
        markDown();
      } else if (typeof (e as { severity?: unknown }).severity === "string") heardAt.set(sql, Date.now()); // the server's error is an answer too
      throw e;
    }
  };
  try {
    await step(tx`BEGIN`.simple());
    let result: T;
    try {
      result = await step(fn(tx));
    } catch (e) {
      if (usable) await step(tx`ROLLBACK`.simple()).catch(() => {});
      throw e;
    }
    const done = await step(tx`COMMIT`.simple());
    if (done.command !== "COMMIT") throw new RolledBackError();
    return result;
  } finally {
    if (usable) tx.release();
  }
}
