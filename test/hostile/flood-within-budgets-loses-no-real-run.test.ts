// A flood within the budgets (issue 15, item 8): anonymous clients send distinct junk bodies,
// one refused update over and over, and orphan final reports, as fast as they can, against the
// compiled binary with small budgets; meanwhile an installer client sends real lifecycles.
// Every real report is acknowledged and stored as sent, the log and the held reports stay
// within their budgets, and the rest is counted, not kept.
import { expect, setDefaultTimeout, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary, startServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(180_000);

const LOG_BUDGET = 1024 * 1024;
const HELD_BUDGET = 128 * 1024;
const FLOOD_MS = 6_000;

function junk(bytes: number): string {
  const raw = new Uint8Array(bytes);
  crypto.getRandomValues(raw);
  return `~${Buffer.from(raw)
    .toString("base64")
    .slice(0, bytes - 1)}`;
}

interface Health {
  status: string;
  storage: {
    budgets: {
      log: {
        limit_bytes: number;
        used_bytes: number;
        entries: number;
        truncated: number;
        evicted: number;
        dropped: number;
        deduplicated: number;
        head_only: number;
      };
      held: { limit_bytes: number; used_bytes: number; count: number; overflowed: number };
    };
  };
}

test("junk, repeats and orphans at full speed: real lifecycles all land, the log and held reports stay within their budgets", async () => {
  const bin = await compiledBinary();
  const dir = tempDir("installstats-flood-");
  const db = join(dir, "flood.db");
  const s = await startServer(bin, [
    "--db",
    db,
    "--log-budget",
    String(LOG_BUDGET),
    "--held-budget",
    String(HELD_BUDGET),
    "--durability",
    "normal",
  ]);
  try {
    const post = (path: string, body: string) =>
      fetch(`${s.url}${path}`, { method: "POST", body, headers: { "content-type": "application/json" } });
    const until = Date.now() + FLOOD_MS;
    const sent = { junk: 0, repeat: 0, orphan: 0 };
    const floodStatuses = new Map<number, number>();
    const count = (status: number) => floodStatuses.set(status, (floodStatuses.get(status) ?? 0) + 1);

    const repeated = JSON.stringify({ random_id: "never-started", status: "done", error: junk(20_000) });
    const flooders = [
      // Distinct 40 KB bodies that are not JSON: each would be logged whole without a budget.
      async () => {
        while (Date.now() < until) {
          count((await post("/telemetry", junk(40_000))).status);
          sent.junk++;
        }
      },
      // The same body again and again (an update for an install nobody started, as /upload sends it).
      async () => {
        while (Date.now() < until) {
          count((await post("/upload/updatestatus", repeated)).status);
          sent.repeat++;
        }
      },
      // Final reports whose start never comes: held (202) until the held budget applies them.
      async () => {
        let i = 0;
        while (Date.now() < until) {
          count(
            (
              await post(
                "/telemetry",
                JSON.stringify({
                  random_id: `orphan-${i++}`,
                  nsapp: "x",
                  type: "lxc",
                  status: "failed",
                  exit_code: 1,
                  error: junk(3_000),
                }),
              )
            ).status,
          );
          sent.orphan++;
        }
      },
    ];

    // The real installer runs: start, a progress ping, a final report, one after another.
    const real: { id: string; app: string; outcome: "done" | "failed" }[] = [];
    const realStatuses: number[] = [];
    const installer = async () => {
      let i = 0;
      while (Date.now() < until) {
        const run = {
          id: `real-${i}`,
          app: `app-${i % 7}`,
          outcome: i % 3 === 0 ? ("failed" as const) : ("done" as const),
        };
        const base = {
          random_id: run.id,
          execution_id: run.id,
          nsapp: run.app,
          type: "lxc",
          ct_type: 1,
          disk_size: 8,
          core_count: 2,
          ram_size: 2048,
          os_type: "debian",
          os_version: "12",
          pve_version: "8.4.1",
          method: "default",
        };
        realStatuses.push((await post("/telemetry", JSON.stringify({ ...base, status: "installing" }))).status);
        realStatuses.push((await post("/telemetry", JSON.stringify({ ...base, status: "configuring" }))).status);
        const final =
          run.outcome === "done"
            ? { status: "success", exit_code: 0, install_duration: 60 }
            : { status: "failed", exit_code: 100, error: `E: apt failed ${i}`, install_duration: 30 };
        realStatuses.push((await post("/telemetry", JSON.stringify({ ...base, ...final }))).status);
        real.push(run);
        i++;
      }
    };
    await Promise.all([...flooders.map((f) => f()), installer()]);

    console.log(
      `flood ${FLOOD_MS / 1000} s: sent ${JSON.stringify(sent)}, answers ${JSON.stringify(Object.fromEntries(floodStatuses))}; real runs ${real.length}`,
    );
    expect(sent.junk).toBeGreaterThan(50);
    expect(real.length).toBeGreaterThan(10);
    // Nothing a flood sends gets a 5xx; real reports are all acknowledged.
    expect([...floodStatuses.keys()].filter((st) => st >= 500)).toEqual([]);
    expect(realStatuses.every((st) => st === 201 || st === 200)).toBe(true);

    // Every real run is stored as sent.
    for (const run of real) {
      const res = await fetch(`${s.url}/api/installs/${run.id}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        nsapp: string;
        outcome: string;
        exit_code: number | null;
        executions: unknown[];
      };
      expect({
        id: run.id,
        nsapp: body.nsapp,
        outcome: body.outcome,
        exit_code: body.exit_code,
        executions: body.executions.length,
      }).toEqual({
        id: run.id,
        nsapp: run.app,
        outcome: run.outcome === "done" ? "success" : "failed",
        exit_code: run.outcome === "done" ? 0 : 100,
        executions: 1,
      });
    }

    // Within the budgets, and the rest counted.
    const health = (await (await fetch(`${s.url}/healthz`)).json()) as Health;
    const { log, held } = health.storage.budgets;
    console.log(
      `log ${log.used_bytes} of ${log.limit_bytes} bytes (head-only ${log.head_only}, truncated ${log.truncated}, evicted ${log.evicted}, dropped ${log.dropped}, deduplicated ${log.deduplicated}); held ${held.used_bytes} of ${held.limit_bytes} bytes, ${held.count} held, ${held.overflowed} applied past the budget`,
    );
    expect(health.status).toBe("ok");
    expect(log.used_bytes).toBeLessThanOrEqual(LOG_BUDGET);
    expect(held.used_bytes).toBeLessThanOrEqual(HELD_BUDGET);
    expect(log.truncated + log.dropped).toBeGreaterThan(0);
    // Every refused request is accounted for: an entry with its whole body (stored once, shared by
    // repeats), one that kept its head (some since evicted to make room), or one only counted.
    // (The first update for "never-started" is held, 202, like an orphan; the refused are 400 and 409.)
    const refused = (floodStatuses.get(400) ?? 0) + (floodStatuses.get(409) ?? 0);
    expect(refused).toBe(sent.junk + sent.repeat - 1);
    expect(log.entries - log.head_only + log.truncated + log.dropped).toBe(refused);
    expect(log.deduplicated).toBeGreaterThan(0);
    if (sent.orphan * 3_000 > 4 * HELD_BUDGET) expect(held.overflowed).toBeGreaterThan(0);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toMatch(/^installstats_log_budget_actions_total\{action="deduplicated"\} [1-9]/m);

    // The flood sent far more than the log could hold; the database grew by executions, not by junk.
    const floodBytes = sent.junk * 40_000 + sent.repeat * repeated.length;
    const dbBytes = statSync(db).size + (statSync(`${db}-wal`, { throwIfNoEntry: false })?.size ?? 0);
    console.log(
      `flood bodies ${(floodBytes / 2 ** 20).toFixed(1)} MB; database and WAL ${(dbBytes / 2 ** 20).toFixed(1)} MB`,
    );
    expect(floodBytes).toBeGreaterThan(8 * LOG_BUDGET);
  } finally {
    await s.stop();
  }
});
