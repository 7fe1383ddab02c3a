import { openSqliteEngine } from "../src/store/sqlite/engine.ts";
import { createStats } from "../src/read/stats.ts";
import { readSums, dailyOf, recentOf, filtersOf } from "../src/read/community/new-dashboard-routes.ts";
import { windowOf } from "../src/read/community/community.ts";
import { allTime } from "../src/read/query.ts";
const engine = openSqliteEngine(process.argv[2]!, { durability: "normal", migrate: true });
const store = engine.store;
const span = (await store.recordSpan())!;
const q = JSON.parse(process.argv[3] ?? "{}");
const p = { repo: "", slug: "", platform: "", ctype: "", ...q };
const w = windowOf(Number(process.argv[4] ?? 365), span.last);
const filters = filtersOf(p);
const cpu = async (name: string, fn: () => Promise<unknown>) => {
  const out: number[] = [];
  for (let i = 0; i < 6; i++) {
    const c = process.cpuUsage();
    await fn();
    const d = process.cpuUsage(c);
    out.push((d.user + d.system) / 1000);
  }
  console.log(name.padEnd(10), out.map((x) => x.toFixed(0)).join(" "));
};
await cpu("readSums", () => readSums(createStats(store, new Map()), filters, w));
await cpu("daily", () => dailyOf(createStats(store, new Map()), filters, w));
await cpu("recent", () => recentOf(store, filters, w));
await cpu("alltime", () => createStats(store, new Map()).summary({}, allTime(span, w.to)));
await cpu("sigs", () => store.signatures([]));
process.exit(0);
