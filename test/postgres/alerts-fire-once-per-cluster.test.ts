// Alerts on nodes sharing a PostgreSQL database: each node runs the alert jobs under the store's
// lease, as serve does, and a firing is recorded and sent once for the cluster, whichever nodes
// run the rounds and however they overlap.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { parseAlerts } from "../../src/alerts/rules.ts";
import { defaults } from "../../src/config.ts";
import { HOUR } from "../../src/domain/time.ts";
import { createLogger } from "../../src/log.ts";
import { createRuntime } from "../../src/runtime.ts";
import { openEngine } from "../../src/store/open.ts";
import { startHttpReceiver } from "../helpers/alert-receivers.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";
import { execution } from "../helpers/reports.ts";

setDefaultTimeout(60_000);

let server: PgServer;
let url: string;
let receiver: ReturnType<typeof startHttpReceiver>;
const stops: (() => Promise<void>)[] = [];
beforeAll(async () => {
  server = await startPostgres();
  url = await createDatabase(server, "alerts");
  receiver = startHttpReceiver();
});
afterAll(async () => {
  for (const stop of stops) await stop();
  receiver?.stop();
  await server?.stop();
});

let now = Date.UTC(2026, 10, 26, 12, 30);
const clock = () => now;

async function node() {
  const alerts = parseAlerts(
    "alerts.toml",
    `
[channel.hook]
type = "webhook"
url = "${receiver.url}/hook"

[[rule]]
id = "spike"
type = "failure_rate"
window = "1h"
min_runs = 10
above = 0.2
send_to = ["hook"]
`,
    {},
  );
  const engine = await openEngine(url, { durability: "full", migrate: true, create: true });
  const runtime = await createRuntime(
    { ...defaults, db: url },
    { clock, log: createLogger("error", () => {}, clock), version: "test", alerts },
    engine,
  );
  stops.push(() => runtime.stop());
  const { store } = runtime;
  // As the job runner does: every round under the store's lease.
  return {
    store,
    evaluate: () => store.leaseJob("alert-evaluate", 0, clock(), () => runtime.alerts!.evaluate()),
    deliver: () => store.leaseJob("alert-deliver", 0, clock(), () => runtime.alerts!.deliver()),
  };
}

describe("alerts on nodes sharing a PostgreSQL database", () => {
  test("three nodes evaluating and delivering at once record one firing and send it once", async () => {
    const nodes = await Promise.all([node(), node(), node()]);
    /** 20 runs of nginx in the last 20 minutes, `failures` of them failed. */
    const runs = (failures: number) =>
      Array.from({ length: 20 }, (_, i) => {
        const createdAt = now - 20 * 60_000 + i * 1000;
        const failed = i < failures;
        return {
          kind: "load" as const,
          at: createdAt,
          execution: execution(`pg-alert-${now}-${i}`, {
            nsapp: "nginx",
            createdAt,
            updatedAt: createdAt + 1,
            finishedAt: createdAt + 1,
            status: failed ? "failed" : "done",
            outcome: failed ? "failed" : "success",
            error: failed ? "exit code 1" : null,
          }),
        };
      });
    await nodes[0]!.store.write(runs(10));
    for (let round = 0; round < 3; round++) {
      await Promise.all(nodes.map((n) => n.evaluate()));
      await Promise.all(nodes.map((n) => n.deliver()));
      now += 60_000;
    }
    expect(receiver.of("webhook")).toHaveLength(1);
    expect(receiver.of("webhook")[0]!.body).toMatchObject({
      status: "firing",
      rule: "spike",
      values: { failed: 10, runs: 20 },
    });
    const history = await nodes[2]!.store.alertHistory({ limit: 10 });
    expect(history.map((e) => [e.rule, e.status, e.deliveries.map((d) => d.state)])).toEqual([
      ["spike", "firing", ["sent"]],
    ]);
    // Every node sees the same state.
    for (const n of nodes)
      expect((await n.store.alertStates()).map((s) => [s.rule, s.status, s.notified])).toEqual([
        ["spike", "firing", true],
      ]);

    // Calm two hours later (runs without failures; no runs at all would be too little data): resolved once.
    now += 2 * HOUR;
    await nodes[1]!.store.write(runs(0));
    await Promise.all(nodes.map((n) => n.evaluate()));
    await Promise.all(nodes.map((n) => n.deliver()));
    expect(receiver.of("webhook").map((r) => (r.body as { status: string }).status)).toEqual(["firing", "resolved"]);
  });
});
