// Held reports are final reports that came before their start report; most are applied a moment
// later, when it comes. One whose start report never came is applied on its own after a while
// (config.heldExpiryMs): it becomes the execution it describes, without a start time or a
// duration, so what a client was told was stored (202) is never dropped, and an anonymous client
// cannot keep rows waiting forever (76,000 orphan updates were 344 MB, never expired: issue 15).
import type { WriteOp } from "../store/contract/store.ts";
import type { GroupCommitWriter } from "../store/writer.ts";
import type { Job } from "./jobs.ts";

/** Held reports applied per transaction. */
const CHUNK = 500;

/** Applies every held report received more than `olderThanMs` ago; returns how many. */
export async function expireHeld(
  commit: (op: Extract<WriteOp, { kind: "expire-held" }>) => Promise<{ kind: "expired-held"; count: number }>,
  olderThanMs: number,
  now: number,
): Promise<number> {
  let expired = 0;
  for (;;) {
    const { count } = await commit({ kind: "expire-held", before: now - olderThanMs, limit: CHUNK, at: now });
    expired += count;
    if (count < CHUNK) return expired;
  }
}

export function expireHeldJob(deps: { writer: GroupCommitWriter; clock: () => number; heldExpiryMs: number }): Job {
  return {
    name: "expire-held",
    // Often enough that "expired" is accurate to a few percent of the configured age.
    everyMs: Math.min(60 * 60_000, Math.max(60_000, deps.heldExpiryMs / 20)),
    run: async () => ({
      expired_held: await expireHeld((op) => deps.writer.submit(op), deps.heldExpiryMs, deps.clock()),
    }),
  };
}
