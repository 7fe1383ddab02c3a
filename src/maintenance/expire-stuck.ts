// Executions that never reported a final status become outcome "unknown" after a while, so they
// stop counting as in progress forever; their status (what was sent) is kept, and a late final
// status still applies.
import type { GroupCommitWriter } from "../store/writer.ts";
import type { MaintenanceReads } from "../store/contract/maintenance.ts";
import type { Job } from "./jobs.ts";

const CHUNK = 500;

/** Expires what is still in progress among the executions created since the last check, then moves the mark. */
export async function expireStuck(
  store: MaintenanceReads,
  writer: GroupCommitWriter,
  olderThanMs: number,
  now: number,
): Promise<number> {
  const mark = await store.stuckCheckedUntil();
  const before = now - olderThanMs;
  if (before <= mark) return 0;
  let expired = 0;
  let from = mark;
  for (;;) {
    const stuck = await store.stuckExecutions(from, before, CHUNK);
    const results = await Promise.all(
      stuck.map(({ executionId }) => writer.submit({ kind: "expire", executionId, at: now })),
    );
    const changed = results.filter((r) => r.kind === "expired" && r.changed).length;
    expired += changed;
    if (stuck.length < CHUNK) break;
    // Expired executions leave the scan; moving `from` up skips those that finished meanwhile.
    const last = stuck[stuck.length - 1]!.createdAt;
    if (last === from && changed === 0) return expired; // cannot progress: the mark stays
    from = last;
  }
  await writer.submit({ kind: "stuck-checked", from: mark, until: before, at: now });
  return expired;
}

export function expireStuckJob(deps: {
  store: MaintenanceReads;
  writer: GroupCommitWriter;
  clock: () => number;
  stuckAfterMs: number;
}): Job {
  return {
    name: "expire-stuck",
    // Often enough that "stuck" is accurate to a few percent of the configured age.
    everyMs: Math.min(10 * 60_000, Math.max(60_000, deps.stuckAfterMs / 20)),
    run: async () => ({ expired: await expireStuck(deps.store, deps.writer, deps.stuckAfterMs, deps.clock()) }),
  };
}
