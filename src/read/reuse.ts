// Answers of expensive reads reused while the data has not changed, or for a while after a costly
// computation: the original API's /data/errors and the community's /api/new pages share them.
import { RecentlyUsed } from "../domain/recently-used.ts";

/** Below this a computation is always redone; above it, its answer may be reused (see reuseWhileExpensive). */
export const EXPENSIVE_MS = 50;

/**
 * Memoizes `compute` by `version` (a cheap change marker). When the data changed but the last
 * computation took EXPENSIVE_MS or more, its answer is reused for 10x its cost, so a dashboard
 * polling an O(records) query can hold the (single-threaded) server at most ~10% of the time.
 * Cost and reuse are timed by the service's clock (`now`): the tests' clock stands still, so there
 * every answer after a change is fresh however loaded the machine is.
 */
export function reuseWhileExpensive<T>(
  compute: () => Promise<T>,
  version: () => Promise<string>,
  now: () => number,
): () => Promise<T> {
  let last: { value: T; version: string; done: number; cost: number } | null = null;
  return async () => {
    const v = await version();
    const start = now();
    if (last && (last.version === v || (last.cost >= EXPENSIVE_MS && start - last.done < last.cost * 10)))
      return last.value;
    const value = await compute();
    const done = now();
    last = { value, version: v, done, cost: done - start };
    return value;
  };
}

/**
 * reuseWhileExpensive per key (a page's parameters), for at most `keys` keys at a time (the least
 * recently asked go first).
 */
export function reuseByKey<T>(
  compute: (key: string) => Promise<T>,
  version: () => Promise<string>,
  now: () => number,
  keys = 64,
): (key: string) => Promise<T> {
  const byKey = new RecentlyUsed<() => Promise<T>>(keys);
  return (key) => {
    let get = byKey.get(key);
    if (get === undefined) byKey.set(key, (get = reuseWhileExpensive(() => compute(key), version, now)));
    return get();
  };
}
