// Scheduled jobs once per cluster: nodes sharing a PostgreSQL database take a lease on each job
// (Store.leaseJob), so a round runs on one node, and not again until it is due.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { openEngine } from "../../src/store/open.ts";
import type { Engine } from "../../src/store/engine.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";

// Starting a server (initdb) takes seconds when the suite's browser tests share the cores: past
// bun's 5 s default, the hook timed out (CI-like run, 2026-11-29).
setDefaultTimeout(60_000);

let server: PgServer;
let url: string;
const engines: Engine[] = [];
beforeAll(async () => {
  server = await startPostgres();
  url = await createDatabase(server, "jobs");
});
afterAll(async () => {
  for (const e of engines) await e.close();
  await server?.stop();
});

const node = async () => {
  const engine = await openEngine(url, { durability: "full", migrate: true, create: true });
  engines.push(engine);
  return engine.store;
};

const MIN = 60_000;

describe("jobs on nodes sharing a PostgreSQL database", () => {
  test("a round runs on one node; the others skip it while it runs and until it is due again", async () => {
    const [a, b, c] = await Promise.all([node(), node(), node()]);
    const t0 = Date.UTC(2026, 10, 25, 12);
    let runs = 0;
    const slow = async () => {
      runs++;
      await Bun.sleep(300);
      return "done";
    };
    // Three nodes' timers fire together: one runs.
    const results = await Promise.all([a, b, c].map((s) => s.leaseJob("fold-rollups", 5 * MIN, t0, slow)));
    expect(results.filter((r) => r === "done")).toHaveLength(1);
    expect(results.filter((r) => r === null)).toHaveLength(2);
    // A minute later it is not due on any node; past its interval it is, on whichever node asks.
    expect(await b.leaseJob("fold-rollups", 5 * MIN, t0 + MIN, slow)).toBeNull();
    expect(await c.leaseJob("fold-rollups", 5 * MIN, t0 + 6 * MIN, slow)).toBe("done");
    expect(runs).toBe(2);
    // Another job has its own lease.
    expect(await a.leaseJob("retention", 5 * MIN, t0 + MIN, async () => "pruned")).toBe("pruned");
  });

  test("a round that fails leaves the job due, and the lease free", async () => {
    const [a, b] = await Promise.all([node(), node()]);
    const t0 = Date.UTC(2026, 10, 26, 12);
    const failure = await a
      .leaseJob("expire-stuck", 10 * MIN, t0, async () => {
        throw new Error("disk on fire");
      })
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toBe("disk on fire");
    expect(await b.leaseJob("expire-stuck", 10 * MIN, t0 + 1000, async () => "ran")).toBe("ran");
  });
});
