// Installs that never reported a final status become outcome "unknown" after a while, so they
// stop counting as in progress forever; their status (what was sent) is kept, and a late final
// status still applies.
import type { GroupCommitWriter } from "../ingest/writer.ts";
import type { StoreReads } from "../store/store.ts";
import type { Job } from "./jobs.ts";

const CHUNK = 500;

export async function expireStuck(store: StoreReads, writer: GroupCommitWriter, olderThanMs: number, now: number): Promise<number> {
  let expired = 0;
  for (;;) {
    const ids = store.stuckInstalls(now - olderThanMs, CHUNK);
    if (ids.length === 0) return expired;
    const results = await Promise.all(ids.map((randomId) => writer.submit({ kind: "expire", randomId, at: now })));
    expired += results.filter((r) => r.kind === "expired" && r.changed).length;
    if (ids.length < CHUNK) return expired;
  }
}

export function expireStuckJob(deps: { store: StoreReads; writer: GroupCommitWriter; clock: () => number; stuckAfterMs: number }): Job {
  return {
    name: "expire-stuck",
    // Often enough that "stuck" is accurate to a few percent of the configured age.
    everyMs: Math.min(10 * 60_000, Math.max(60_000, deps.stuckAfterMs / 20)),
    run: async () => ({ expired: await expireStuck(deps.store, deps.writer, deps.stuckAfterMs, deps.clock()) }),
  };
}
