// One transaction on one connection, its COMMIT checked. PostgreSQL answers COMMIT of a
// transaction that failed along the way with ROLLBACK, not an error; postgres.js's own `begin`
// does not look. Behind a pooler in transaction mode with prepared statements on, a COMMIT that
// met another server connection failed, was sent again, and "succeeded" as ROLLBACK: measured, 3
// of 63 acknowledged writes were not stored (docs/decisions.md). Here a ROLLBACK is an error, so
// nothing is acknowledged that was not committed, whatever sits between the node and the server.
import type { Sql } from "postgres";

/** The transaction was rolled back by the server although nothing failed before COMMIT. */
export class RolledBackError extends Error {
  readonly code = "40000"; // SQLSTATE transaction_rollback: the write may be sent again
  constructor() {
    super("the server rolled the transaction back at COMMIT (it had failed along the way); nothing was written");
    this.name = "RolledBackError";
  }
}

export async function transaction<T>(sql: Sql, fn: (tx: Sql) => Promise<T>): Promise<T> {
  const tx = await sql.reserve();
  try {
    // The simple protocol: no prepared statement a pooler could lose.
    await tx`BEGIN`.simple();
    let result: T;
    try {
      result = await fn(tx);
    } catch (e) {
      await tx`ROLLBACK`.simple().catch(() => {}); // a lost connection has rolled it back already
      throw e;
    }
    const done = await tx`COMMIT`.simple();
    if (done.command !== "COMMIT") throw new RolledBackError();
    return result;
  } finally {
    tx.release();
  }
}
