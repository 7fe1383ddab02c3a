// Rate limit by network over HTTP (issue 26), through a proxy on this host (a trusted
// X-Forwarded-For from 127.0.0.1): 300 start reports from 300 addresses of one /64 meet the limit
// as one client's would, while distinct IPv4 hosts keep their own allowance; /metrics counts
// refusals per family. Past its share of the rejected-reports log a network's bodies are kept by
// their head, past its share of held reports a final report before its start is applied on its
// own. The keying itself: test/unit/rate-limit-network-of-an-address.test.ts.
import { describe, expect, test } from "bun:test";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";

/** The app on a free port of 127.0.0.1; each request as a client behind a proxy on this host (X-Forwarded-For). */
function behindProxy(t: TestApp) {
  t.app.listen({ hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${t.app.server!.port}`;
  return {
    async post(path: string, body: string | object, client: string) {
      const res = await fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": client },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    },
    stop: () => t.app.stop(true),
  };
}

const metric = async (t: TestApp, line: string) => {
  await Bun.sleep(10);
  const text = await (await t.app.handle(new Request("http://localhost/metrics"))).text();
  return Number(
    text
      .split("\n")
      .find((l) => l.startsWith(line))
      ?.slice(line.length)
      .trim() ?? "0",
  );
};

describe("over HTTP, through a proxy on this host", () => {
  test("300 start reports from 300 addresses of one /64: the burst, then 429; distinct IPv4 hosts keep their own allowance; refusals by family in /metrics", async () => {
    const t = await testApp(); // the defaults: 5/s, burst 60, /64 and /32
    const proxy = behindProxy(t);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 300; i++) {
        const address = `2001:db8:4:5:${((i * 2654435761) % 65536).toString(16)}:${i.toString(16)}:beef:${(i + 1).toString(16)}`;
        statuses.push(
          (
            await proxy.post(
              "/telemetry",
              { ...startReport(`v6-${i}`), payload_version: 2, execution_id: `v6-${i}` },
              address,
            )
          ).status,
        );
      }
      const created = statuses.filter((s) => s === 201).length;
      const limited = statuses.filter((s) => s === 429).length;
      // The burst of 60 and what the rate refilled while the requests went (the clock stands still: none).
      expect(created).toBe(60);
      expect(limited).toBe(240);
      // 60 IPv4 hosts, 60 reports each: none is limited by the others.
      for (let host = 1; host <= 60; host++) {
        for (let k = 0; k < 60; k++) {
          const r = await proxy.post("/upload", startReport(`v4-${host}-${k}`), `198.51.100.${host}`);
          if (r.status !== 201) throw new Error(`198.51.100.${host} report ${k}: ${r.status}`);
        }
      }
      expect((await proxy.post("/upload", startReport("v4-1-over"), "198.51.100.1")).status).toBe(429);
      // Another /64 of the same /48 is another customer.
      expect((await proxy.post("/upload", startReport("v6-next"), "2001:db8:4:6::1")).status).toBe(201);
      // The mapped spelling of an IPv4 host is that host.
      expect((await proxy.post("/upload", startReport("v4-2-mapped"), "::ffff:198.51.100.2")).status).toBe(429);
      expect(await metric(t, 'installstats_rate_limited_total{family="ipv6"}')).toBe(240);
      expect(await metric(t, 'installstats_rate_limited_total{family="ipv4"}')).toBe(2);
      t.clock.advance(1000); // 5 tokens a second
      expect(
        (await proxy.post("/telemetry", { ...startReport("v6-later"), payload_version: 2 }, "2001:db8:4:5::abcd"))
          .status,
      ).toBe(201);
    } finally {
      await proxy.stop();
    }
  });

  test("--rate-limit-v6-prefix 56 joins the /64s of a /56; --rate-limit-v4-prefix 24 the hosts of a /24", async () => {
    const t = await testApp({ rateLimit: 1, rateBurst: 2, rateLimitV6Prefix: 56, rateLimitV4Prefix: 24 });
    const proxy = behindProxy(t);
    try {
      const send = (id: string, client: string) => proxy.post("/upload", startReport(id), client).then((r) => r.status);
      expect([
        await send("a", "2001:db8:9:100::1"),
        await send("b", "2001:db8:9:1ff::1"),
        await send("c", "2001:db8:9:142::7"),
      ]).toEqual([201, 201, 429]);
      expect(await send("d", "2001:db8:9:200::1")).toBe(201); // the next /56
      expect([
        await send("e", "203.0.113.1"),
        await send("f", "203.0.113.254"),
        await send("g", "203.0.113.77"),
      ]).toEqual([201, 201, 429]);
      expect(await send("h", "203.0.114.1")).toBe(201);
    } finally {
      await proxy.stop();
    }
  });
});

describe("each network's share of what the store keeps besides reports", () => {
  test("over HTTP: past its share of the log a network's bodies are kept by their head; past its held share its early final reports are applied on their own", async () => {
    // Shares of 1/64: 2 KiB of log and 1 KiB of held reports an hour per network.
    const t = await testApp({ logBudget: 128 * 1024, heldBudget: 64 * 1024 });
    const proxy = behindProxy(t);
    const junk = (n: number) => `{"random_id": "j${n}", "type": "lxc", "error": "${"x".repeat(1500)}`; // not JSON: 400, logged
    try {
      const attacker = (i: number) => `2001:db8:66:1::${i.toString(16)}`;
      for (let i = 0; i < 4; i++) expect((await proxy.post("/upload", junk(i), attacker(i))).status).toBe(400);
      expect((await proxy.post("/upload", junk(9), "198.51.100.20")).status).toBe(400);
      const log = await t.rejected();
      const kept = log.map((e) => ({ whole: e.bodyKept, size: e.bodySize, bytes: e.body.byteLength }));
      expect(kept).toEqual([
        { whole: true, size: 1545, bytes: 1545 }, // within the /64's share
        { whole: false, size: 1545, bytes: 256 }, // past it: the head, the size
        { whole: false, size: 1545, bytes: 256 },
        { whole: false, size: 1545, bytes: 256 },
        { whole: true, size: 1545, bytes: 1545 }, // another network
      ]);
      expect(await metric(t, 'installstats_client_share_used_total{share="log"}')).toBe(3);

      // Final reports before their start: held (202) within the share, applied on their own (201) past it.
      const orphan = (i: number) => ({
        payload_version: 2,
        random_id: `o${i}`,
        execution_id: `o${i}`,
        type: "lxc",
        nsapp: "x",
        status: "failed",
        exit_code: 1,
        error: "e".repeat(600),
      });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await proxy.post("/telemetry", orphan(i), attacker(i))).status);
      expect(statuses).toEqual([202, 202, 201, 201]); // the second one overdrew the share
      expect((await proxy.post("/telemetry", orphan(9), "198.51.100.21")).status).toBe(202);
      expect((await t.store.budgets()).held.count).toBe(3);
      expect((await t.get("/api/installs/o3")).body).toMatchObject({
        executions: [{ outcome: "failed", duration_s: null }],
      });
      expect(await metric(t, 'installstats_client_share_used_total{share="held"}')).toBe(2);
    } finally {
      await proxy.stop();
    }
  });
});
