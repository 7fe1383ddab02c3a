// The month partitions of `executions` (docs/decisions/2026-11-26-postgresql-large-tables.md): made
// when a write needs one, by whichever node gets there first, and dropped whole by retention.
// A partition is created apart (LIKE executions) and then attached, which locks the parent in
// SHARE UPDATE EXCLUSIVE mode only: writers and readers go on meanwhile (CREATE TABLE ...
// PARTITION OF would lock them out).
import type { Sql } from "postgres";
import { transaction } from "./transaction.ts";

/** First instant (epoch ms, UTC) of the month `at` falls in, and of the month after. */
export function monthOf(at: number): { from: number; to: number } {
  const d = new Date(at);
  return {
    from: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1),
    to: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1),
  };
}

/** executions_pYYYYMM: the partition of the month starting at `from` (as the migration names them). */
export function partitionName(from: number): string {
  const d = new Date(from);
  const year = String(d.getUTCFullYear()).padStart(4, "0");
  return `executions_p${year}${String(d.getUTCMonth() + 1).padStart(2, "0")}`;
}

/** Advisory lock nodes take to make a partition ("part"). */
const PARTITION_LOCK = 0x70617274;

/** SQLSTATE 23514 with this message: an execution's month has no partition (yet, or any more). */
export function missingMonth(e: unknown): number | null {
  const err = e as { code?: string; message?: string; detail?: string };
  if (err.code !== "23514" || !/no partition of relation "executions"/.test(err.message ?? "")) return null;
  const m = /\(created_at\) = \((-?\d+)\)/.exec(err.detail ?? "");
  return m ? Number(m[1]) : null;
}

/** The months that have a partition, as far as this node knows: made ones are remembered, dropped ones found out on the next write. */
export class Partitions {
  private readonly known = new Set<number>();

  constructor(private readonly sql: Sql) {}

  /** Makes sure each of these months (epoch ms of any instant in them) has a partition; `recheck` asks the database even when this node thinks so. */
  async ensure(instants: Iterable<number>, recheck = false): Promise<void> {
    const months = new Set<number>();
    for (const at of instants) {
      const { from } = monthOf(at);
      if (recheck || !this.known.has(from)) months.add(from);
    }
    for (const from of months) await this.make(from);
  }

  forget(from: number): void {
    this.known.delete(from);
  }

  private async make(from: number): Promise<void> {
    const name = partitionName(from);
    const { to } = monthOf(from);
    await transaction(this.sql, async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${PARTITION_LOCK})`;
      const [row] = await tx<{ found: boolean }[]>`SELECT to_regclass(${name}) IS NOT NULL AS found`;
      if (row?.found) return;
      await tx.unsafe(`CREATE TABLE "${name}" (LIKE "executions" INCLUDING DEFAULTS)`);
      await tx.unsafe(`ALTER TABLE "executions" ATTACH PARTITION "${name}" FOR VALUES FROM (${from}) TO (${to})`);
    });
    this.known.add(from);
  }

  /** Month starts of the partitions that exist, oldest first. */
  async list(sql: Sql = this.sql): Promise<number[]> {
    const rows = await sql<{ name: string }[]>`
      SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'executions'::regclass`;
    return rows
      .map((r) => /^executions_p(\d{4})(\d{2})$/.exec(r.name))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Date.UTC(Number(m[1]), Number(m[2]) - 1, 1))
      .sort((a, b) => a - b);
  }
}
