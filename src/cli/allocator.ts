// The memory allocator's setting a server runs under. Bun's allocator (mimalloc) gives the memory
// a write batch frees back to the system within milliseconds, and the next batch takes it again a
// page fault at a time. A PostgreSQL node builds protocol messages of ~100 KB per batch: giving
// back and faulting in were a quarter of its CPU per report (the SQLite server's a tenth)
// (docs/decisions/2026-11-29-postgresql-nodes-keep-freed-memory.md). mimalloc reads its options
// once, as the process starts, so a node runs itself again with the option set. The SQLite server
// keeps giving memory back: its idle RSS is a homelab's budget (10 MB more without).
import type { DatabaseLocation } from "../store/location.ts";

/** mimalloc's delay before freed memory goes back to the system, in ms; -1: never. */
export const PURGE_DELAY = "MIMALLOC_PURGE_DELAY";

/**
 * The environment serve is to run under, or null to run under the present one: a PostgreSQL node
 * keeps what its allocator frees, unless the operator set PURGE_DELAY (whatever its value).
 */
export function serveEnvironment(
  engine: DatabaseLocation["engine"],
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> | null {
  if (engine !== "postgres" || env[PURGE_DELAY] !== undefined) return null;
  const next: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) next[name] = value;
  next[PURGE_DELAY] = "-1";
  return next;
}
