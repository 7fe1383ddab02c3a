// The relay to an upstream collector, in process: the service's own runtime over an in-memory
// database, a real local upstream (test/helpers/upstream.ts) that is told to fail, hang and
// recover, and reports sent as the clients send them.
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { ConfigError, loadConfig, type Config } from "../../src/config.ts";
import { testApp, startReport, type TestApp } from "../helpers/app.ts";
import { startUpstream, until, type Received, type Upstream } from "../helpers/upstream.ts";

// Backoff after failures is real time: a test of failures waits a few seconds.
setDefaultTimeout(60_000);

const ADMIN = "admin-secret";
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(over: Partial<Config> = {}): Promise<{ t: TestApp; up: Upstream }> {
  const up = await startUpstream();
  // A timeout long enough that a busy machine does not turn a slow answer into a failure.
  const t = await testApp({ relayUrl: up.url, relayRate: 0, relayTimeoutMs: 3000, adminToken: ADMIN, ...over });
  // The test's clock keeps pace with real time: a failed entry's retry time (on this clock) comes
  // when the sender's backoff (real time) ends.
  const ticking = setInterval(() => t.clock.advance(50), 50);
  cleanups.push(async () => {
    clearInterval(ticking);
    await t.stop();
    await up.stop();
  });
  return { t, up };
}

const v2 = (id: string, status: string, extra: Record<string, unknown> = {}) => ({
  payload_version: 2,
  random_id: id,
  execution_id: id,
  type: "lxc",
  nsapp: "jellyfin",
  status,
  ct_type: 1,
  disk_size: 8,
  core_count: 2,
  ram_size: 2048,
  os_type: "debian",
  os_version: "12",
  pve_version: "8.4.1",
  method: "default",
  exit_code: 0,
  error: "",
  platform: "pve",
  repo_source: "ProxmoxVE",
  repo_slug: "community-scripts/ProxmoxVE",
  ...extra,
});

/** What arrived upstream, per execution, in order of arrival: "path status". */
function perExecution(received: readonly Received[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of received) {
    const id = String(r.body.execution_id ?? r.body.random_id);
    out.set(id, [...(out.get(id) ?? []), `${r.path} ${String(r.body.status)}`]);
  }
  return out;
}

const relayHealth = async (t: TestApp) => (await t.get("/healthz")).body.relay as Record<string, unknown>;
/** The outbox empty and the sender idle: the settlement committed and the next claim found nothing (between the two the sender still says "sending"). */
const drained = async (t: TestApp) => {
  const h = await relayHealth(t);
  return h.entries === 0 && h.state === "idle";
};
const metric = async (t: TestApp, name: string): Promise<number | null> => {
  const text = await (await t.app.handle(new Request("http://localhost/metrics"))).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? null : Number(line.split(" ").at(-1));
};
const admin = (t: TestApp, path: string, method = "POST") =>
  t.app
    .handle(new Request(`http://localhost${path}`, { method, headers: { authorization: `Bearer ${ADMIN}` } }))
    .then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));

describe("relay", () => {
  test("every accepted report arrives upstream exactly once, in its protocol, in order per execution; rejected and repeated ones do not", async () => {
    const { t, up } = await setup();
    t.relay.start();
    // Each report and whether the relay sends it: every 2xx that is not a duplicate.
    const sends: [string, string | object, number][] = [
      ["/upload", startReport("u1"), 201],
      ["/upload", startReport("u1"), 200], // the client's retry: a duplicate
      ["/upload/updatestatus", { status: "done", error: "none", random_id: "u1" }, 200],
      ["/upload/updatestatus", { status: "failed", error: "exit code 2 at 192.168.1.7", random_id: "u2" }, 202], // before its start: held
      ["/upload", startReport("u2", { nsapp: "docker" }), 201],
      ["/upload", "{not json", 400],
      ["/upload", { ...startReport("u3"), type: "spaceship" }, 422],
      ["/telemetry", v2("t1", "installing"), 201],
      ["/telemetry", v2("t1", "installing"), 200], // a retry
      ["/telemetry", v2("t1", "validation"), 200],
      ["/telemetry", v2("t1", "configuring"), 200],
      [
        "/telemetry",
        {
          payload_version: 2,
          random_id: "t1",
          execution_id: "t1",
          type: "lxc",
          nsapp: "jellyfin",
          status: "configuring",
          platform: "pve",
          repo_source: "ProxmoxVE",
          repo_slug: "community-scripts/ProxmoxVE",
        },
        200,
      ], // the container's ping: nothing new
      ["/telemetry", v2("t1", "success", { install_duration: 95 }), 200],
      ["/telemetry", v2("t1", "success", { install_duration: 95 }), 200], // repeated final report
      ["/telemetry", { ...v2("t2", "installing"), payload_version: undefined }, 201], // v1
      [
        "/telemetry",
        {
          ...v2("t2", "failed", { exit_code: 100, error: "exit_code=100 | apt-get failed at 10.1.2.3" }),
          payload_version: undefined,
        },
        200,
      ],
      ["/telemetry", { ...v2("t2", "installing"), execution_id: "t2-retry" }, 201],
      ["/telemetry", { ...v2("t2", "success"), execution_id: "t2-retry" }, 200],
      ["/telemetry", v2("tool1", "success", { type: "pve", nsapp: "post-pve-install" }), 201],
      // Broken JSON as bash builds it (a raw newline in the error): repaired, stored, relayed as clean JSON.
      [
        "/telemetry",
        '{"payload_version": 2, "random_id": "t3", "execution_id": "t3", "type": "pve", "nsapp": "host-backup", "status": "failed", "exit_code": 1, "error": "line one\nline "two""}',
        201,
      ],
    ];
    for (const [path, body, status] of sends) {
      const res = await t.post(path, body);
      expect(`${path} ${res.status}`).toBe(`${path} ${status}`);
    }
    const expected = new Map<string, string[]>([
      ["u1", ["/upload installing", "/upload/updatestatus done"]],
      ["u2", ["/upload installing", "/upload/updatestatus failed"]],
      ["t1", ["/telemetry installing", "/telemetry validation", "/telemetry configuring", "/telemetry success"]],
      ["t2", ["/telemetry installing", "/telemetry failed"]],
      ["t2-retry", ["/telemetry installing", "/telemetry success"]],
      ["tool1", ["/telemetry success"]],
      ["t3", ["/telemetry failed"]],
    ]);
    const total = [...expected.values()].flat().length;
    await until(async () => (await drained(t)) && up.received.length >= total, "the outbox to drain");
    expect(up.received).toHaveLength(total);
    expect(perExecution(up.received)).toEqual(expected);

    // In the shape the clients send: JSON, the fields as stored (addresses masked), each protocol's own.
    for (const r of up.received) {
      expect(r.contentType).toBe("application/json");
      expect(r.userAgent).toMatch(/^installstats\/\S+ \(relay\)$/);
    }
    const byKey = (id: string, status: string) =>
      up.received.find((r) => (r.body.execution_id ?? r.body.random_id) === id && r.body.status === status)!.body;
    expect(byKey("u1", "installing")).toEqual({
      ct_type: 1,
      type: "lxc",
      disk_size: 8,
      core_count: 2,
      ram_size: 2048,
      os_type: "debian",
      os_version: "12",
      disableip6: "yes",
      nsapp: "adguard",
      method: "default",
      pve_version: "8.2.2",
      status: "installing",
      random_id: "u1",
    });
    expect(byKey("u2", "failed")).toEqual({
      status: "failed",
      error: expect.not.stringContaining("192.168.1.7"),
      random_id: "u2",
    });
    expect(byKey("t2", "failed")).not.toHaveProperty("payload_version");
    expect(byKey("t2", "failed").error).not.toContain("10.1.2.3");
    expect(byKey("t1", "success")).toMatchObject({
      payload_version: 2,
      execution_id: "t1",
      install_duration: 95,
      repo_slug: "community-scripts/ProxmoxVE",
    });
    expect(byKey("t3", "failed").error).toBe('line one\nline "two"');
    const stored = (await t.get("/api/installs/t3")).body as { error: string };
    expect(stored.error).toBe('line one\nline "two"');

    expect(await relayHealth(t)).toMatchObject({
      enabled: true,
      state: "idle",
      entries: 0,
      sent: total,
      failed_attempts: 0,
      dropped: { bound: 0, discarded: 0 },
    });
    expect(await metric(t, "installstats_relay_sent_total")).toBe(total);
  });

  test("the upstream fails, hangs and recovers: nothing is lost, a report it took without answering comes again with the same ids, ingestion never waits", async () => {
    const { t, up } = await setup({ relayTimeoutMs: 1000 });
    up.setMode("fail");
    t.relay.start();
    const ids = Array.from({ length: 8 }, (_, i) => `f${i}`);
    for (const id of ids) expect((await t.post("/telemetry", v2(id, "installing"))).status).toBe(201);
    // Two failed rounds, and backing off (1 s at least after the second): looked at within it.
    await until(async () => {
      const h = await relayHealth(t);
      return (h.failed_attempts as number) >= 2 && h.state === "backing_off";
    }, "two failed attempts");
    const failing = await relayHealth(t);
    expect(failing).toMatchObject({ state: "backing_off", last_error: expect.stringContaining("HTTP 503") });
    expect(Date.parse(String(failing.retry_at))).toBeGreaterThan(t.clock());
    expect(await metric(t, "installstats_relay_up")).toBe(0);
    expect(up.received).toEqual([]);

    // Taken, never answered: the relay gives up after its timeout and will send it again.
    up.setMode("take-and-hang");
    await until(() => up.pending() > 0, "a request held by the upstream");
    // While the upstream holds the relay's request, reports are answered as always.
    for (const id of ids) expect((await t.post("/telemetry", v2(id, "success"))).status).toBe(200);
    expect(up.pending()).toBeGreaterThan(0);
    await until(
      async () => String((await relayHealth(t)).last_error).startsWith("no answer within 1000 ms"),
      "the relay's timeout",
    );
    const takenWithoutAnswer = up.received.length;
    expect(takenWithoutAnswer).toBeGreaterThan(0);

    up.setMode("ok");
    await until(() => drained(t), "the outbox to drain");
    // Every report arrived, in order per execution, at least once; repeats are whole reports with the same ids.
    const arrived = perExecution(up.received);
    for (const id of ids)
      expect([...new Set(arrived.get(id))]).toEqual(["/telemetry installing", "/telemetry success"]);
    const distinct = new Set(up.received.map((r) => JSON.stringify(r.body)));
    expect(distinct.size).toBe(ids.length * 2);
    expect(up.received.length - distinct.size).toBeGreaterThanOrEqual(1); // the one taken without an answer
    expect(up.received.length - distinct.size).toBeLessThanOrEqual(takenWithoutAnswer);
    // A repeat never comes after a later report of its execution.
    for (const [id, seq] of arrived)
      expect({ id, ok: seq.indexOf("/telemetry success") > seq.lastIndexOf("/telemetry installing") }).toEqual({
        id,
        ok: true,
      });
    expect(await relayHealth(t)).toMatchObject({ state: "idle", entries: 0, sent: ids.length * 2 });
    expect(await metric(t, "installstats_relay_up")).toBe(1);
    expect((await metric(t, "installstats_relay_failed_attempts_total"))!).toBeGreaterThanOrEqual(3);
  });

  test("an endpoint the upstream lacks fails its own reports only: they back off and wait, the others go", async () => {
    const { t, up } = await setup();
    up.setMissing(["/upload", "/upload/updatestatus"]);
    t.relay.start();
    await t.post("/upload", startReport("old-1"));
    for (const id of ["n1", "n2", "n3"]) await t.post("/telemetry", v2(id, "installing"));
    await until(() => up.received.length === 3, "the /telemetry reports");
    // The /upload report may have gone out alone first (the whole sender backed off) or beside the
    // others (it waited alone); either way the sender settles idle with only it left.
    await until(async () => {
      const h = await relayHealth(t);
      return h.entries === 1 && h.state === "idle" && (h.head_attempts as number) >= 1;
    }, "the /upload report's failure, the sender idle");
    expect(await relayHealth(t)).toMatchObject({
      entries: 1,
      state: "idle",
      last_error: "HTTP 404: 404 page not found",
    });
    // Still kept; sent once the upstream has the path (or dropped from the relay with --relay-protocols telemetry).
    up.setMissing([]);
    await until(() => up.received.length === 4, "the /upload report", 30_000);
    expect(up.received[3]!).toMatchObject({ path: "/upload", body: { random_id: "old-1" } });
  });

  test("the bound: past it the oldest reports are dropped and counted; the newest arrive", async () => {
    const { t, up } = await setup({ relayMaxBytes: 2500 });
    t.relay.start();
    // Paused: reports are queued, none is sent (and none is in flight while the bound acts).
    expect((await admin(t, "/api/admin/relay/pause")).body).toMatchObject({ action: "pause", relay: { paused: true } });
    await until(async () => (await relayHealth(t)).state === "paused", "the sender to see the pause");
    const ids = Array.from({ length: 40 }, (_, i) => `b${String(i).padStart(2, "0")}`);
    for (const id of ids) expect((await t.post("/upload", startReport(id))).status).toBe(201);
    const h = await relayHealth(t);
    const kept = h.entries as number;
    expect(kept).toBeGreaterThan(5);
    expect(kept).toBeLessThan(40);
    expect(h.bytes as number).toBeLessThanOrEqual(2500);
    expect(h).toMatchObject({ max_bytes: 2500, dropped: { bound: 40 - kept, discarded: 0 } });
    expect(await metric(t, 'installstats_relay_dropped_total{reason="bound"}')).toBe(40 - kept);
    expect(await metric(t, "installstats_relay_outbox_bytes")).toBe(h.bytes as number);
    expect(await metric(t, "installstats_relay_paused")).toBe(1);
    // Every report is stored all the same: the bound is the relay's, not ingestion's.
    expect((await t.get("/api/installs/b00")).status).toBe(200);

    expect((await admin(t, "/api/admin/relay/resume")).body).toMatchObject({
      action: "resume",
      relay: { paused: false },
    });
    await until(() => up.received.length === kept, "the kept reports to arrive");
    // Executions go out a few at once: the order among them is not kept, only within each.
    expect(up.received.map((r) => String(r.body.random_id)).sort()).toEqual(ids.slice(40 - kept));
  });

  test("a user and password in --relay-url go as basic authentication, never into /healthz", async () => {
    const up = await startUpstream();
    const t = await testApp({ relayUrl: up.url.replace("http://", "http://relay:s%40cret@"), relayRate: 0 });
    cleanups.push(async () => {
      await t.stop();
      await up.stop();
    });
    t.relay.start();
    await t.post("/upload", startReport("auth-1"));
    await until(() => up.received.length === 1, "the report");
    expect(up.received[0]!.authorization).toBe(`Basic ${Buffer.from("relay:s@cret").toString("base64")}`);
    const h = await relayHealth(t);
    expect(String(h.url)).toBe(`${up.url.replace("http://", "http://relay:***@")}/`);
  });

  test("only the chosen repositories, without the omitted fields", async () => {
    const { t, up } = await setup({ relayRepos: ["ProxmoxVE"], relayOmit: ["error", "cpu_model"] });
    t.relay.start();
    await t.post(
      "/telemetry",
      v2("main", "failed", { type: "pve", exit_code: 1, error: "exit_code=1 | boom", cpu_model: "Xeon" }),
    );
    await t.post(
      "/telemetry",
      v2("fork", "failed", {
        type: "pve",
        exit_code: 1,
        error: "x",
        repo_source: "external",
        repo_slug: "someone/ProxmoxVE",
      }),
    );
    await t.post(
      "/telemetry",
      v2("dev", "success", { type: "pve", repo_source: "ProxmoxVED", repo_slug: "community-scripts/ProxmoxVED" }),
    );
    await t.post("/upload", startReport("old")); // the old client names no repository: counted as ProxmoxVE
    await until(() => up.received.length >= 2, "two reports");
    await until(async () => ((await relayHealth(t)).entries as number) === 0, "the outbox to drain");
    expect(up.received.map((r) => r.body.random_id)).toEqual(["main", "old"]);
    expect(up.received[0]!.body).not.toHaveProperty("error");
    expect(up.received[0]!.body).not.toHaveProperty("cpu_model");
    expect(up.received[0]!.body).toMatchObject({ exit_code: 1, nsapp: "jellyfin", status: "failed" });
    // Stored locally as sent.
    expect((await t.get("/api/installs/fork")).status).toBe(200);
    expect(((await t.get("/api/installs/main")).body as { error: string }).error).toBe("exit_code=1 | boom");
  });

  test("a report the upstream refuses is kept, not sent again until requeued; discard drops what is left (counted)", async () => {
    const { t, up } = await setup();
    up.setMode("refuse");
    t.relay.start();
    await t.post("/telemetry", v2("r1", "installing"));
    await until(async () => ((await relayHealth(t)).refused as number) === 1, "the refusal");
    expect(await relayHealth(t)).toMatchObject({ entries: 1, refusals: 1, last_error: null });
    expect(await metric(t, 'installstats_relay_outbox_entries{state="refused"}')).toBe(1);
    // Later reports of other executions still go; this execution's next one waits behind nothing refused.
    up.setMode("ok");
    await t.post("/telemetry", v2("r2", "installing"));
    await t.post("/telemetry", v2("r1", "success"));
    await until(() => up.received.length === 2, "two reports");
    expect(up.received.map((r) => `${r.body.random_id} ${r.body.status}`).sort()).toEqual([
      "r1 success",
      "r2 installing",
    ]);
    expect((await admin(t, "/api/admin/relay/requeue")).body).toMatchObject({ entries: 1 });
    await until(() => up.received.length === 3, "the requeued report");
    expect(up.received[2]!.body).toMatchObject({ random_id: "r1", status: "installing" });

    up.setMode("fail");
    await t.post("/telemetry", v2("r3", "installing"));
    expect((await admin(t, "/api/admin/relay/discard")).body).toMatchObject({
      action: "discard",
      entries: 1,
      relay: { entries: 0, dropped: { discarded: 1 } },
    });
    expect((await admin(t, "/api/admin/relay", "GET")).body).toMatchObject({ enabled: true, entries: 0 });
    expect((await admin(t, "/api/admin/relay/flush")).status).toBe(400);
    expect((await t.app.handle(new Request("http://localhost/api/admin/relay/pause", { method: "POST" }))).status).toBe(
      401,
    );
  });

  test("deleting an install removes its reports from the outbox too", async () => {
    const { t, up } = await setup();
    await t.post("/upload", startReport("gone"));
    await t.post("/upload", startReport("stays"));
    expect((await relayHealth(t)).entries).toBe(2);
    const del = await t.app.handle(
      new Request("http://localhost/api/installs/gone", {
        method: "DELETE",
        headers: { authorization: `Bearer ${ADMIN}` },
      }),
    );
    expect(del.status).toBe(200);
    t.relay.start();
    await until(async () => ((await relayHealth(t)).entries as number) === 0, "the outbox to drain");
    expect(up.received.map((r) => r.body.random_id)).toEqual(["stays"]);
  });

  test("off by default; settings that cannot work are refused with the setting's name", async () => {
    const t = await testApp();
    cleanups.push(() => t.stop());
    await t.post("/upload", startReport("x"));
    expect(await relayHealth(t)).toMatchObject({ enabled: false, state: "off", url: null, entries: 0 });
    await expect(testApp({ relayUrl: "http://127.0.0.1:9", relayOmit: ["random_id", "error"] })).rejects.toThrow(
      /--relay-omit: random_id cannot be left out/,
    );
    expect(() => loadConfig({ "relay-url": "ftp://example.org" }, {})).toThrow(ConfigError);
    expect(() => loadConfig({}, { INSTALLSTATS_RELAY_URL: "https://example.org/telemetry?key=1" })).toThrow(
      /INSTALLSTATS_RELAY_URL: must not have a query/,
    );
    expect(
      loadConfig(
        {
          "relay-url": "https://telemetry.community-scripts.org",
          "relay-repos": "ProxmoxVE, ProxmoxVED",
          "relay-max-outbox": "8m",
        },
        {},
      ),
    ).toMatchObject({
      relayUrl: "https://telemetry.community-scripts.org",
      relayRepos: ["ProxmoxVE", "ProxmoxVED"],
      relayMaxBytes: 8 * 1024 * 1024,
    });
  });
});
