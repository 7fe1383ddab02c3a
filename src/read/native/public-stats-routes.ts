// The opt-in public statistics (issue 18 item 4), as Homebrew publishes its analytics: runs and
// failure rates per app over the last 30, 90 and 365 days, from rollups, for anyone to read
// without a token. A privacy floor merges every app with fewer installs in a window into
// "other", so a rarely installed app never points at the few people who ran it.
import { Elysia, t, type Static } from "elysia";
import type { StoreReads } from "../../store/contract/executions.ts";
import type { Group } from "../aggregate.ts";
import { windowJson } from "../query.ts";
import { createStats } from "../stats.ts";
import { DAY, HOUR, floorHour } from "../../domain/time.ts";

const PUBLIC_WINDOWS = [30, 90, 365] as const;
/** How long one answer is reused: the page changes slowly, and anyone may ask for it. */
export const PUBLIC_CACHE_MS = 10 * 60 * 1000;

const Counts = {
  installs: t.Integer({
    description:
      "runs of installer scripts started in the window (a retry is a run of its own), whatever their outcome",
  }),
  success: t.Integer(),
  failed: t.Integer(),
  blocked: t.Integer({ description: "ended before the script ran: the host would not provide a working container" }),
  aborted: t.Integer({ description: "stopped by the user" }),
  failure_rate: t.Nullable(t.Number({ description: "failed / (success + failed); null when no run finished" })),
};
const AppRow = t.Object({ app: t.String(), ...Counts });
const WindowStats = t.Object({
  days: t.Integer(),
  window: t.Object({ from: t.String({ format: "date-time" }), to: t.String({ format: "date-time" }) }),
  total: t.Object(Counts),
  apps: t.Array(AppRow, {
    description: "apps with at least min_installs installs in the window, most installed first",
  }),
  other: t.Object({ apps: t.Integer({ description: "apps below the floor, merged here" }), ...Counts }),
});
export const PublicStats = t.Object(
  {
    generated_at: t.String({ format: "date-time" }),
    min_installs: t.Integer({
      description: "the privacy floor: apps with fewer installs in a window are merged into other",
    }),
    windows: t.Array(WindowStats),
  },
  { title: "PublicStats" },
);
export type PublicStats = Static<typeof PublicStats>;

type CountsOf = Static<ReturnType<typeof t.Object<typeof Counts>>>;

const rate = (success: number, failed: number): number | null =>
  success + failed === 0 ? null : Math.round((failed / (success + failed)) * 10_000) / 10_000;

function countsOf(g: { total: number; success: number; failed: number; blocked: number; aborted: number }): CountsOf {
  return {
    installs: g.total,
    success: g.success,
    failed: g.failed,
    blocked: g.blocked,
    aborted: g.aborted,
    failure_rate: rate(g.success, g.failed),
  };
}

/**
 * Splits per-app groups at the privacy floor: apps with at least `floor` installs are listed, most
 * installed first (then by name); the others are summed into one "other" row with how many they were.
 */
export function applyFloor(
  groups: readonly Pick<Group, "value" | "total" | "success" | "failed" | "blocked" | "aborted">[],
  floor: number,
) {
  const apps: Static<typeof AppRow>[] = [];
  const other = { apps: 0, total: 0, success: 0, failed: 0, blocked: 0, aborted: 0 };
  const total = { total: 0, success: 0, failed: 0, blocked: 0, aborted: 0 };
  for (const g of groups) {
    for (const k of ["total", "success", "failed", "blocked", "aborted"] as const) total[k] += g[k];
    // Runs without an app name are nobody's app: always "other".
    if (g.value !== null && g.total >= floor) apps.push({ app: g.value, ...countsOf(g) });
    else {
      other.apps += g.value === null ? 0 : 1;
      for (const k of ["total", "success", "failed", "blocked", "aborted"] as const) other[k] += g[k];
    }
  }
  apps.sort((a, b) => b.installs - a.installs || (a.app < b.app ? -1 : a.app > b.app ? 1 : 0));
  return { total: countsOf(total), apps, other: { apps: other.apps, ...countsOf(other) } };
}

export interface PublicStatsDeps {
  store: StoreReads;
  clock: () => number;
  minInstalls: number;
}

/** The statistics of the three windows, each ending with the current hour; installs only (no host tools or addons). */
async function computePublicStats({ store, clock, minInstalls }: PublicStatsDeps): Promise<PublicStats> {
  const stats = createStats(store);
  const now = clock();
  const to = floorHour(now) + HOUR;
  const windows = await Promise.all(
    PUBLIC_WINDOWS.map(async (days) => {
      const w = { from: to - days * DAY, to };
      const { groups } = await stats.breakdown({ kind: "install", from: w.from, to: w.to }, w, {
        by: "nsapp",
        sort: "volume",
        minRuns: 0,
        limit: Number.MAX_SAFE_INTEGER,
      });
      return { days, window: windowJson(w), ...applyFloor(groups, minInstalls) };
    }),
  );
  return { generated_at: new Date(now).toISOString(), min_installs: minInstalls, windows };
}

/**
 * GET /public/stats.json, open to anyone and to any origin (it is published on purpose), computed
 * at most once per PUBLIC_CACHE_MS on this node and cached by browsers and proxies as long.
 */
export function publicStatsRoutes(deps: PublicStatsDeps) {
  let cached: { at: number; body: Promise<PublicStats> } | null = null;
  const current = (): Promise<PublicStats> => {
    const now = deps.clock();
    if (cached === null || now - cached.at >= PUBLIC_CACHE_MS || now < cached.at) {
      const body = computePublicStats(deps);
      // A failed computation is not kept: the next request tries again.
      body.catch(() => {
        if (cached?.body === body) cached = null;
      });
      cached = { at: now, body };
    }
    return cached.body;
  };
  return new Elysia({ name: "public-stats" }).get(
    "/public/stats.json",
    async ({ set }) => {
      const body = await current();
      set.headers["cache-control"] = `public, max-age=${PUBLIC_CACHE_MS / 1000}`;
      set.headers["access-control-allow-origin"] = "*";
      return body;
    },
    {
      response: { 200: PublicStats },
      detail: {
        tags: ["public"],
        summary: "Public statistics (opt-in: --public-stats true)",
        description: `Installs and failure rates per app over the last ${PUBLIC_WINDOWS.join(", ")} days, without a token. Apps with fewer installs than the privacy floor (--public-min-installs) in a window are merged into "other". Recomputed at most every ${PUBLIC_CACHE_MS / 60_000} minutes. Not served (404) unless enabled.`,
        security: [],
      },
    },
  );
}
