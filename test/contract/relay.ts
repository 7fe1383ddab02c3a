// The Store contract, the relay's outbox.
import { describe, expect, test } from "bun:test";
import { HOUR } from "../../src/domain/time.ts";
import type { RelayPolicy } from "../../src/domain/relay.ts";
import type { Store, WriteOp } from "../../src/store/contract/store.ts";
import {
  type Harness,
  loadOp,
  MIN,
  one,
  PAST,
  record,
  rejectOp,
  type ReportFields,
  startOp,
  updateOp,
} from "./harness.ts";

/** The contract's tests of this feature, in the suite of one engine (suite.ts). */
export function relayContract({ database, freshStore }: Harness): void {
  // -------------------------------------------------------------- the relay's outbox

  describe("relay outbox", () => {
    const policy = (over: Partial<RelayPolicy> = {}): RelayPolicy => ({
      protocols: ["telemetry", "upload"],
      repos: [],
      omit: [],
      maxBytes: 1 << 30,
      ...over,
    });
    const tel = (randomId: string, executionId: string, status: string, at: number, fields: ReportFields = {}) =>
      startOp(randomId, { status, ...fields }, at, { executionId, payloadVersion: 2 });
    const claim = async (store: Store, owner = "a", limit = 100, at = PAST) =>
      one(store, { kind: "relay-claim", owner, limit, leaseMs: 60_000, at });
    const settle = (store: Store, over: Partial<Extract<WriteOp, { kind: "relay-settle" }>>) =>
      one(store, {
        kind: "relay-settle",
        owner: "a",
        sent: [],
        failed: [],
        refused: [],
        released: [],
        at: PAST,
        ...over,
      });
    /** Claims and sends everything, as a sender does, and returns each entry in the order sent: endpoint and body. */
    async function drain(store: Store): Promise<{ endpoint: string; body: Record<string, unknown> }[]> {
      const out: { endpoint: string; body: Record<string, unknown> }[] = [];
      for (let round = 0; round < 100; round++) {
        const { entries } = await claim(store);
        if (entries.length === 0) return out;
        for (const e of entries)
          out.push({ endpoint: e.endpoint, body: JSON.parse(e.body) as Record<string, unknown> });
        await settle(store, { sent: entries.map((e) => e.id) });
      }
      throw new Error("the outbox never drained");
    }

    test("nothing is queued while the store relays nothing", async () => {
      const store = await freshStore();
      await store.write([startOp("r0", {}, PAST), updateOp("r0", "done", null, PAST + MIN)]);
      expect(await claim(store)).toEqual({ kind: "claimed", paused: false, entries: [] });
      expect(await store.relayStatus()).toMatchObject({ entries: 0, bytes: 0, sent: 0 });
    });

    test("every report that changed what is stored is queued in its protocol, in order per execution; repeats, refusals and loads are not", async () => {
      const store = await freshStore();
      store.setRelay(policy());
      await store.write([
        startOp("u1", { nsapp: "nginx", disableip6: null }, PAST),
        startOp("u1", { nsapp: "nginx" }, PAST + 1), // the client's retry: a duplicate
        tel("t1", "t1", "installing", PAST + 2, { nsapp: "jellyfin", repoSource: "ProxmoxVE", kernelVersion: "6.8" }),
        rejectOp(PAST + 3),
        loadOp(record("l1", { createdAt: PAST })),
      ]);
      await store.write([
        updateOp("u1", "failed", "exit code 100", PAST + MIN),
        tel("t1", "t1", "configuring", PAST + MIN),
        tel("t1", "t1", "configuring", PAST + MIN + 1), // nothing new
        tel("t1", "t1", "failed", PAST + 2 * MIN, {
          exitCode: 100,
          error: "exit_code=100 | apt",
          errorCategory: "dependency",
          repoSource: "ProxmoxVE",
          kernelVersion: "6.8",
        }),
        tel("t1", "t1", "failed", PAST + 2 * MIN + 1, { exitCode: 100, error: "exit_code=100 | apt" }), // a repeated final report
      ]);
      const status = await store.relayStatus();
      expect(status).toMatchObject({
        entries: 5,
        waiting: 0,
        refused: 0,
        head: { queuedAt: PAST, attempts: 0, lastError: null },
      });
      expect(status.bytes).toBeGreaterThan(0);

      // The first claim has each execution's first entry only.
      const first = await claim(store);
      expect(first.entries.map((e) => [e.executionId, e.endpoint])).toEqual([
        ["u1", "upload"],
        ["t1", "telemetry"],
      ]);
      expect(first.entries[0]!.id).toBeLessThan(first.entries[1]!.id);
      expect(JSON.parse(first.entries[0]!.body)).toEqual({
        ct_type: 1,
        type: "lxc",
        disk_size: 8,
        core_count: 2,
        ram_size: 2048,
        os_type: "debian",
        os_version: "12",
        nsapp: "nginx",
        method: "default",
        pve_version: "8.2.2",
        status: "installing",
        random_id: "u1",
      });
      await settle(store, { sent: first.entries.map((e) => e.id) });
      const rest = await drain(store);
      expect(rest.map((e) => [e.endpoint, e.body.status])).toEqual([
        ["updatestatus", "failed"],
        ["telemetry", "configuring"],
        ["telemetry", "failed"],
      ]);
      expect(rest[0]!.body).toEqual({ status: "failed", error: "exit code 100", random_id: "u1" });
      expect(rest[2]!.body).toMatchObject({
        payload_version: 2,
        random_id: "t1",
        execution_id: "t1",
        type: "lxc",
        nsapp: "nginx",
        status: "failed",
        exit_code: 100,
        error: "exit_code=100 | apt",
        error_category: "dependency",
        repo_source: "ProxmoxVE",
        kernel_version: "6.8",
      });
      expect(await store.relayStatus()).toMatchObject({ entries: 0, bytes: 0, sent: 5, head: null });
    });

    test("a final status held before its start waits, and is sent after the start; applied on its own, it is sent as it stands", async () => {
      const store = await freshStore();
      store.setRelay(policy());
      expect(await one(store, updateOp("h1", "done", null, PAST))).toEqual({ kind: "held" });
      expect(await one(store, tel("h2", "h2", "success", PAST + 1, { exitCode: 0 }))).toEqual({ kind: "held" });
      expect(await store.relayStatus()).toMatchObject({ entries: 2, waiting: 2 });
      expect((await claim(store)).entries).toEqual([]);

      await one(store, startOp("h1", {}, PAST + MIN));
      expect(await drain(store)).toEqual([
        { endpoint: "upload", body: expect.objectContaining({ random_id: "h1", status: "installing" }) },
        { endpoint: "updatestatus", body: { status: "done", random_id: "h1" } },
      ]);
      // h2's start never comes: applied on its own, its entry is sent as it stands.
      expect(await one(store, { kind: "expire-held", before: PAST + HOUR, limit: 10, at: PAST + HOUR })).toEqual({
        kind: "expired-held",
        count: 1,
      });
      expect(await drain(store)).toEqual([
        {
          endpoint: "telemetry",
          body: expect.objectContaining({ execution_id: "h2", status: "success", exit_code: 0 }),
        },
      ]);
      expect(await store.relayStatus()).toMatchObject({ entries: 0, waiting: 0, sent: 3 });
    });

    test("only the chosen repositories, without the omitted fields", async () => {
      const store = await freshStore();
      store.setRelay(policy({ repos: ["proxmoxve", "someone/proxmoxve-fork"], omit: ["error", "cpu_model"] }));
      await store.write([
        tel("main", "main", "failed", PAST, {
          type: "pve",
          repoSource: "ProxmoxVE",
          repoSlug: "community-scripts/ProxmoxVE",
          error: "exit_code=1 | x",
          exitCode: 1,
          cpuModel: "Xeon",
        }),
        tel("fork", "fork", "failed", PAST, {
          type: "pve",
          repoSource: "external",
          repoSlug: "Someone/ProxmoxVE",
          error: "exit_code=1",
          exitCode: 1,
        }),
        tel("fork2", "fork2", "failed", PAST, {
          type: "pve",
          repoSource: "external",
          repoSlug: "someone/ProxmoxVE-fork",
          exitCode: 1,
        }),
        tel("dev", "dev", "success", PAST, { type: "pve", repoSource: "ProxmoxVED", exitCode: 0 }),
        startOp("old", {}, PAST), // /upload: no repository, counted as ProxmoxVE (as the community service files it)
      ]);
      // A status update carries no repository: the stored execution's counts.
      await store.write([updateOp("old", "failed", "exit code 2", PAST + MIN)]);
      const sent = await drain(store);
      expect(sent.map((e) => e.body.random_id)).toEqual(["main", "fork2", "old", "old"]);
      expect(sent[0]!.body).not.toHaveProperty("error");
      expect(sent[0]!.body).not.toHaveProperty("cpu_model");
      expect(sent[0]!.body).toMatchObject({ exit_code: 1, repo_slug: "community-scripts/ProxmoxVE" });
      expect(sent[3]!.body).toEqual({ status: "failed", random_id: "old" });
    });

    test("only the chosen protocols: /upload reports, held ones too, stay home when only /telemetry is relayed", async () => {
      const store = await freshStore();
      store.setRelay(policy({ protocols: ["telemetry"] }));
      await store.write([
        updateOp("p1", "done", null, PAST),
        startOp("p2", {}, PAST),
        tel("p3", "p3", "installing", PAST),
      ]);
      await store.write([startOp("p1", {}, PAST + MIN)]);
      expect((await drain(store)).map((e) => [e.endpoint, e.body.random_id])).toEqual([["telemetry", "p3"]]);
      expect(await store.relayStatus()).toMatchObject({ entries: 0, waiting: 0, sent: 1 });
    });

    test("past the bound the oldest entries not in flight are dropped and counted", async () => {
      const store = await freshStore();
      store.setRelay(policy());
      await one(store, startOp("b99", {}, PAST));
      const one_ = (await store.relayStatus()).bytes;
      await one(store, { kind: "relay-control", action: "discard", at: PAST });
      store.setRelay(policy({ maxBytes: one_ * 10 }));
      // 30 start reports of the same size: the outbox keeps the newest 10.
      for (let i = 0; i < 3; i++)
        await store.write(Array.from({ length: 10 }, (_, j) => startOp(`b${i}${j}`, {}, PAST + i * 10 + j)));
      const status = await store.relayStatus();
      expect(status).toMatchObject({ entries: 10, bytes: one_ * 10, dropped: { bound: 20, discarded: 1 } });
      // An entry in flight stays; the oldest others go instead.
      const inFlight = (await claim(store, "a", 1)).entries[0]!;
      expect(inFlight.randomId).toBe("b20");
      await one(store, startOp("b30", {}, PAST + 100));
      expect((await drain(store)).map((e) => e.body.random_id)).toEqual([
        "b20",
        "b22",
        "b23",
        "b24",
        "b25",
        "b26",
        "b27",
        "b28",
        "b29",
        "b30",
      ]);
      expect(await store.relayStatus()).toMatchObject({ entries: 0, bytes: 0, dropped: { bound: 21, discarded: 1 } });
    });

    test("failed, refused, released, paused, requeued, discarded; deleting an install removes its entries", async () => {
      const store = await freshStore();
      store.setRelay(policy());
      await store.write([
        startOp("f1", {}, PAST),
        startOp("f2", {}, PAST + 1),
        startOp("f3", {}, PAST + 2),
        startOp("f4", {}, PAST + 3),
      ]);
      await one(store, updateOp("f2", "done", null, PAST + MIN));
      const [e1, e2, e3, e4] = (await claim(store)).entries;
      // A claim again by the same owner (a sender that restarted) gets the same entries.
      expect((await claim(store)).entries.map((e) => e.id)).toEqual([e1!.id, e2!.id, e3!.id, e4!.id]);
      const failed = [{ id: e2!.id, error: "HTTP 503", retryAt: PAST + MIN }];
      expect(
        await settle(store, {
          sent: [e1!.id],
          failed,
          refused: [{ id: e3!.id, error: "HTTP 400: invalid payload" }],
          released: [e4!.id],
        }),
      ).toEqual({ kind: "settled", sent: 1 });
      expect(await store.relayStatus()).toMatchObject({
        entries: 4,
        refused: 1,
        sent: 1,
        failedAttempts: 1,
        refusals: 1,
        head: { attempts: 1, lastError: "HTTP 503" },
      });
      // f2's entry failed: not offered before its retry time, and f2's update waits behind it; f3 (refused) is not offered.
      expect((await claim(store, "a", 100, PAST + MIN - 1)).entries.map((e) => e.randomId)).toEqual(["f4"]);
      const again = (await claim(store, "a", 100, PAST + MIN)).entries;
      expect(again.map((e) => [e.randomId, e.endpoint, e.attempts])).toEqual([
        ["f2", "upload", 1],
        ["f4", "upload", 0],
      ]);
      await settle(store, { released: again.map((e) => e.id) });

      expect(await one(store, { kind: "relay-control", action: "pause", at: PAST })).toEqual({
        kind: "relay-controlled",
        entries: 0,
      });
      expect(await claim(store)).toEqual({ kind: "claimed", paused: true, entries: [] });
      expect((await store.relayStatus()).paused).toBe(true);
      await one(store, { kind: "relay-control", action: "resume", at: PAST });
      expect(await one(store, { kind: "relay-control", action: "requeue", at: PAST })).toEqual({
        kind: "relay-controlled",
        entries: 1,
      });
      expect((await claim(store, "a", 100, PAST + MIN)).entries.map((e) => e.randomId)).toEqual(["f2", "f3", "f4"]);

      await one(store, { kind: "delete", randomId: "f2", at: PAST });
      expect(await store.relayStatus()).toMatchObject({ entries: 2, paused: false });
      expect(await one(store, { kind: "relay-control", action: "discard", at: PAST })).toEqual({
        kind: "relay-controlled",
        entries: 2,
      });
      // A settlement of entries discarded meanwhile counts nothing.
      expect(await settle(store, { sent: [e3!.id, e4!.id] })).toEqual({ kind: "settled", sent: 0 });
      expect(await store.relayStatus()).toMatchObject({
        entries: 0,
        bytes: 0,
        sent: 1,
        dropped: { bound: 0, discarded: 2 },
      });
      // Ids are never handed out again: a new entry does not take a discarded one's.
      await one(store, startOp("f5", {}, PAST + 5));
      expect((await claim(store)).entries[0]!.id).toBeGreaterThan(e4!.id);
    });

    test("the outbox, its counters and the pause survive a reopen", async () => {
      const db = await database();
      const store = await db.open();
      store.setRelay(policy());
      await store.write([startOp("k1", {}, PAST), updateOp("k2", "done", null, PAST)]);
      await one(store, { kind: "relay-control", action: "pause", at: PAST });
      const before = await store.relayStatus();
      await store.close();
      const reopened = await db.open();
      expect(await reopened.relayStatus()).toEqual(before);
      await one(reopened, { kind: "relay-control", action: "resume", at: PAST });
      expect((await drain(reopened)).map((e) => e.body.random_id)).toEqual(["k1"]);
    });
  });
}
