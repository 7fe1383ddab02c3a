// /api/errors names each failing app's first signature (most failures, then the smallest id). The
// settled sum's signatures are ranked once (read/failures.ts firstSignature) and the open cells'
// counts, which may take failures away, are put on top: the result must be what ranking the
// combined counts gives, ties, removals and an empty settled sum included.
import { expect, test } from "bun:test";
import { firstSignature, type AppFailures } from "../../src/read/failures.ts";

/** The first signature of the counts combined, by brute force. */
function expected(settled: Map<string, number>, more: Map<string, number>): [string, number] | null {
  const all = new Map(settled);
  for (const [id, n] of more) all.set(id, (all.get(id) ?? 0) + n);
  const ranked = [...all].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return ranked[0] ?? null;
}

test("the first of settled and open signatures is the first of their sum", () => {
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let round = 0; round < 2000; round++) {
    const ids = Array.from({ length: 1 + random(8) }, (_, i) => `s${i}`);
    const settled = new Map<string, number>();
    for (const id of ids) if (random(3) > 0) settled.set(id, random(5));
    const more = new Map<string, number>();
    for (const id of ids) if (random(3) === 0) more.set(id, random(7) - 3);
    const tally: AppFailures = { codes: new Map(), categories: new Map(), signatures: settled };
    const base = random(5) === 0 ? undefined : tally;
    const want = expected(base?.signatures ?? new Map(), more);
    expect([round, firstSignature(base, more)]).toEqual([round, want]);
    // Asked again (its ranking now kept) with other open counts, still the sum's first.
    const again = new Map([[ids[random(ids.length)]!, random(7) - 3]]);
    expect([round, firstSignature(base, again)]).toEqual([round, expected(base?.signatures ?? new Map(), again)]);
  }
});
