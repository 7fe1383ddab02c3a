// The relay with many nodes on one PostgreSQL database (a throwaway server on 127.0.0.1): no
// entry is in two nodes' claims at once, a node that dies leaves its claims to the others when
// the lease ends, and two compiled nodes relaying one data set to a local upstream deliver every
// report once, in order per execution, sharing the work.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { deriveOutcome } from "../../src/domain/outcome.ts";
import type { RelayPolicy } from "../../src/domain/relay.ts";
import { UNDESCRIBED, type Report } from "../../src/domain/execution.ts";
import type { RelayEntry } from "../../src/store/contract/relay.ts";
import type { Store, WriteOp } from "../../src/store/contract/store.ts";
import { openEngine } from "../../src/store/open.ts";
import type { Engine } from "../../src/store/engine.ts";
import { compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";
import { startUpstream, until, type Upstream } from "../helpers/upstream.ts";

setDefaultTimeout(120_000);

let pg: PgServer;
const engines: Engine[] = [];
const servers: RunningServer[] = [];
let up: Upstream | undefined;

beforeAll(async () => {
  pg = await startPostgres();
});
afterAll(async () => {
  for (const s of servers) if (s.proc.exitCode === null) await s.stop("SIGKILL");
  for (const e of engines) await e.close().catch(() => {});
  await up?.stop();
  await pg?.stop();
});

const POLICY: RelayPolicy = { protocols: ["telemetry", "upload"], repos: [], omit: [], maxBytes: 1 << 30 };
const T0 = Date.UTC(2026, 5, 1);

/** Two stores on one database, as two nodes have. */
async function twoNodes(name: string): Promise<[Store, Store]> {
  const url = await createDatabase(pg, name);
  const open = async () => {
    const e = await openEngine(url, { durability: "normal", migrate: true, create: true });
    engines.push(e);
    e.store.setRelay(POLICY);
    return e.store;
  };
  return [await open(), await open()];
}

function report(id: string, status: string): Extract<WriteOp, { kind: "report" }> {
  const r: Report = {
    executionId: id,
    randomId: id,
    payloadVersion: 2,
    status,
    outcome: deriveOutcome(status, null),
    error: null,
    exitCode: status === "success" ? 0 : null,
    errorCategory: null,
    failedCommand: null,
    failedLine: null,
    installDuration: null,
    fields: {
      ...UNDESCRIBED,
      type: "lxc",
      ctType: 1,
      diskSize: 8,
      coreCount: 2,
      ramSize: 2048,
      osType: "debian",
      osVersion: "12",
      nsapp: "nginx",
      method: "default",
      pveVersion: "8.4.1",
      platform: "pve",
      repoSource: "ProxmoxVE",
    },
  };
  return { kind: "report", endpoint: "telemetry", report: r, raw: new Uint8Array(), repairs: [], at: T0 };
}

const claim = async (store: Store, owner: string, at: number, leaseMs = 60_000): Promise<RelayEntry[]> => {
  const [r] = await store.write([{ kind: "relay-claim", owner, limit: 10, leaseMs, at }]);
  return r!.kind === "claimed" ? r.entries : [];
};
const settle = (store: Store, owner: string, sent: number[]) =>
  store.write([{ kind: "relay-settle", owner, sent, failed: [], refused: [], released: [], at: T0 }]);

describe("relay on PostgreSQL, many nodes", () => {
  test("two nodes claiming at once: no entry in both claims, every entry sent once, each execution's in order", async () => {
    const [a, b] = await twoNodes("relay_claims");
    const ids = Array.from({ length: 60 }, (_, i) => `c${i}`);
    for (const status of ["installing", "configuring", "success"]) await a.write(ids.map((id) => report(id, status)));
    expect((await a.relayStatus()).entries).toBe(180);

    const sent: { node: string; entry: RelayEntry }[] = [];
    const inFlight = new Set<number>();
    const overlaps: number[] = [];
    const node = async (store: Store, owner: string) => {
      for (let round = 0; round < 200; round++) {
        const entries = await claim(store, owner, T0);
        if (entries.length === 0) {
          if ((await store.relayStatus()).entries === 0) return;
          await Bun.sleep(5);
          continue;
        }
        for (const e of entries) {
          if (inFlight.has(e.id)) overlaps.push(e.id);
          inFlight.add(e.id);
          sent.push({ node: owner, entry: e });
        }
        await Bun.sleep(2); // "sending"
        for (const e of entries) inFlight.delete(e.id);
        await settle(
          store,
          owner,
          entries.map((e) => e.id),
        );
      }
    };
    await Promise.all([node(a, "A"), node(b, "B")]);
    expect(overlaps).toEqual([]);
    expect(sent).toHaveLength(180);
    expect(new Set(sent.map((s) => s.entry.id)).size).toBe(180);
    const order = new Map<string, string[]>();
    for (const { entry } of sent)
      order.set(entry.executionId, [
        ...(order.get(entry.executionId) ?? []),
        String((JSON.parse(entry.body) as { status: string }).status),
      ]);
    for (const id of ids) expect(order.get(id)).toEqual(["installing", "configuring", "success"]);
    expect(new Set(sent.map((s) => s.node))).toEqual(new Set(["A", "B"]));
    expect(await b.relayStatus()).toMatchObject({ entries: 0, bytes: 0, sent: 180 });
  });

  test("a node that dies with a claim: the others take it when its lease ends, not before", async () => {
    const [a, b] = await twoNodes("relay_lease");
    await a.write([report("l1", "installing"), report("l2", "installing")]);
    expect((await claim(a, "A", T0, 1000)).map((e) => e.executionId)).toEqual(["l1", "l2"]);
    // A is gone without settling. Its lease runs: B gets nothing, and A's later entries wait too.
    await b.write([report("l1", "success")]);
    expect(await claim(b, "B", T0 + 999)).toEqual([]);
    const taken = await claim(b, "B", T0 + 1000);
    expect(taken.map((e) => e.executionId)).toEqual(["l1", "l2"]);
    await settle(
      b,
      "B",
      taken.map((e) => e.id),
    );
    expect((await claim(b, "B", T0 + 1001)).map((e) => [e.executionId, JSON.parse(e.body).status])).toEqual([
      ["l1", "success"],
    ]);
    // A comes back and settles its old claim: those entries left already, nothing is counted twice.
    expect(
      await settle(
        a,
        "A",
        taken.map((e) => e.id),
      ),
    ).toEqual([{ kind: "settled", sent: 0 }]);
  });

  test("bound and counters with two nodes writing at once: the outbox stays near its bound, every drop counted", async () => {
    const [a, b] = await twoNodes("relay_bound");
    a.setRelay({ ...POLICY, maxBytes: 20_000 });
    b.setRelay({ ...POLICY, maxBytes: 20_000 });
    await Promise.all(
      [a, b].map(async (s, n) => {
        for (let i = 0; i < 20; i++)
          await s.write(Array.from({ length: 10 }, (_, j) => report(`n${n}-${i}-${j}`, "installing")));
      }),
    );
    const status = await a.relayStatus();
    const one = Math.round(status.bytes / status.entries);
    // Each node sees the other's committed totals only: at most a batch each past the bound.
    expect(status.bytes).toBeLessThanOrEqual(20_000 + 2 * 10 * one);
    expect(status.entries + status.dropped.bound).toBe(400);
    expect(status.dropped.bound).toBeGreaterThan(300);
  });

  test("two compiled nodes relaying one data set: every report delivered exactly once, in order, both nodes sending", async () => {
    up = await startUpstream({ delayMs: 5 });
    const url = await createDatabase(pg, "relay_nodes");
    const bin = await compiledBinary();
    const start = () =>
      startServer(bin, ["--db", url, "--rate-limit", "0", "--relay-url", up!.url, "--relay-rate", "0"]);
    const [x, y] = await Promise.all([start(), start()]);
    servers.push(x, y);
    const ids = Array.from({ length: 120 }, (_, i) => `n${i}`);
    const post = (node: RunningServer, id: string, status: string) =>
      fetch(`${node.url}/telemetry`, {
        method: "POST",
        body: JSON.stringify({
          payload_version: 2,
          random_id: id,
          execution_id: id,
          type: "lxc",
          nsapp: "nginx",
          status,
          exit_code: 0,
          platform: "pve",
        }),
      });
    // Each install's reports alternate between the nodes.
    await Promise.all(
      ids.map(async (id, i) => {
        for (const [k, status] of ["installing", "validation", "configuring", "success"].entries())
          expect((await post((i + k) % 2 ? x : y, id, status)).status).toBeLessThan(300);
      }),
    );
    const health = async (node: RunningServer) =>
      ((await (await fetch(`${node.url}/healthz`)).json()) as { relay: { entries: number; sent: number } }).relay;
    await until(
      async () => up!.received.length >= 480 && (await health(x)).entries === 0,
      "the outbox to drain",
      60_000,
    );
    await Bun.sleep(1000); // a second send would come now, if there were one
    expect(up.received).toHaveLength(480);
    expect(new Set(up.received.map((r) => JSON.stringify(r.body))).size).toBe(480);
    const order = new Map<string, string[]>();
    for (const r of up.received)
      order.set(String(r.body.execution_id), [
        ...(order.get(String(r.body.execution_id)) ?? []),
        String(r.body.status),
      ]);
    for (const id of ids) expect(order.get(id)).toEqual(["installing", "validation", "configuring", "success"]);
    // Both nodes sent: each one's own count of deliveries.
    const sentBy = async (node: RunningServer) => {
      const text = await (await fetch(`${node.url}/metrics`)).text();
      return Number(/installstats_relay_request_duration_seconds_count\{result="sent"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const [sx, sy] = await Promise.all([sentBy(x), sentBy(y)]);
    expect(sx + sy).toBe(480);
    expect(Math.min(sx, sy)).toBeGreaterThan(0);
    expect(await health(y)).toMatchObject({ entries: 0, sent: 480 });
  });
});
