// Each app's install type as its newest run has it, learned from the store (an index seek per app,
// typesOfApps) and kept per store across requests: the ~350 apps of /api/scripts were half of its
// CPU at 1M installs when every request asked again.
import type { StoreReads } from "../store/contract/executions.ts";

/** A learned type; `at` is when, by the caller's clock, or null when the caller keeps no time (stats.ts checks it against the cells instead). */
interface Learned {
  type: string;
  at: number | null;
}

const kept = new WeakMap<StoreReads, Map<string, Learned>>();

function keptOf(store: StoreReads): Map<string, Learned> {
  let map = kept.get(store);
  if (map === undefined) kept.set(store, (map = new Map()));
  return map;
}

/** Learns these apps' types afresh (an app without runs has none). */
export async function learnTypes(store: StoreReads, apps: readonly string[], at: number | null = null): Promise<void> {
  if (apps.length === 0) return;
  const learned = await store.typesOfApps(apps);
  const map = keptOf(store);
  for (const app of apps) map.delete(app);
  for (const a of learned) map.set(a.nsapp, { type: a.type, at });
}

/** The types kept, however long ago learned: a caller that counts by them checks them (stats.ts). */
export function keptTypes(store: StoreReads): ReadonlyMap<string, { type: string }> {
  return keptOf(store);
}

/** How long a learned type answers a listing before it is learned again: an app's newest run rarely changes type. */
const TYPE_KEPT_MS = 60_000;

/**
 * Each app's type as of its newest run, learned at most TYPE_KEPT_MS before `now`: a listing shows
 * a type that changed within the last minute as it was. Apps without runs are left out.
 */
export async function typesAsOf(store: StoreReads, apps: readonly string[], now: number): Promise<Map<string, string>> {
  const map = keptOf(store);
  const fresh = (l: Learned | undefined) =>
    l !== undefined && l.at !== null && l.at <= now && now - l.at < TYPE_KEPT_MS;
  await learnTypes(
    store,
    apps.filter((app) => !fresh(map.get(app))),
    now,
  );
  const out = new Map<string, string>();
  for (const app of apps) {
    const l = map.get(app);
    if (l !== undefined) out.set(app, l.type);
  }
  return out;
}
