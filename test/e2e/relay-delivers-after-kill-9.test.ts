// The relay in the compiled binary: killed with SIGKILL under load while it sends, restarted on
// the same database, it delivers every report it acknowledged (at least once, with the same ids,
// in order per execution); and `installstats relay` pauses and resumes a running server's sender.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { startUpstream, until, type Upstream } from "../helpers/upstream.ts";

setDefaultTimeout(120_000);

let bin: string;
let up: Upstream;
const servers: RunningServer[] = [];

beforeAll(async () => {
  // Each answer takes 20 ms: the kill below lands while requests are in flight.
  [bin, up] = await Promise.all([compiledBinary(), startUpstream({ delayMs: 20 })]);
});
afterAll(async () => {
  for (const s of servers) if (s.proc.exitCode === null) await s.stop("SIGKILL");
  await up?.stop();
});

const serve = async (db: string) => {
  const s = await startServer(bin, [
    "--db",
    db,
    "--rate-limit",
    "0",
    "--relay-url",
    up.url,
    "--relay-rate",
    "0",
    "--relay-timeout",
    "2s",
  ]);
  servers.push(s);
  return s;
};
const relayOf = async (s: RunningServer) =>
  (
    (await (await fetch(`${s.url}/healthz`)).json()) as {
      relay: { entries: number; sent: number; state: string; paused: boolean };
    }
  ).relay;
const v2 = (id: string, status: string) =>
  JSON.stringify({
    payload_version: 2,
    random_id: id,
    execution_id: id,
    type: "lxc",
    nsapp: `app-${id.length % 7}`,
    status,
    exit_code: status === "failed" ? 1 : 0,
    platform: "pve",
    repo_source: "ProxmoxVE",
  });

describe("relay in the binary", () => {
  test("SIGKILL under load while sending, then a restart: every acknowledged report arrives upstream, in order per execution", async () => {
    const db = join(tempDir(), "relay.db");
    const server = await serve(db);
    /** Acknowledged reports, per execution, in the order acknowledged. */
    const acked = new Map<string, string[]>();
    const deadline = Date.now() + 10_000;
    const worker = async (w: number) => {
      for (let i = 0; Date.now() < deadline; i++) {
        const id = `k-${w}-${i}`;
        for (const status of ["installing", "configuring", i % 4 ? "success" : "failed"]) {
          const res = await fetch(`${server.url}/telemetry`, {
            method: "POST",
            body: v2(id, status),
            headers: { "content-type": "application/json" },
          }).catch(() => null);
          if (!res || res.status >= 300) return;
          acked.set(id, [...(acked.get(id) ?? []), status]);
        }
      }
    };
    const load = Array.from({ length: 16 }, (_, w) => worker(w));
    await until(() => up.received.length > 100, "the relay to be sending");
    server.proc.kill("SIGKILL");
    await server.proc.exited;
    await Promise.all(load);
    const ackedCount = [...acked.values()].flat().length;
    const beforeRestart = up.received.length;
    expect(ackedCount).toBeGreaterThan(beforeRestart); // some were still in the outbox

    const restarted = await serve(db);
    await until(async () => (await relayOf(restarted)).entries === 0, "the outbox to drain after the restart", 60_000);
    const arrived = new Map<string, string[]>();
    for (const r of up.received) {
      const id = String(r.body.execution_id);
      if (id.startsWith("k-")) arrived.set(id, [...(arrived.get(id) ?? []), String(r.body.status)]);
    }
    const lost: string[] = [];
    const outOfOrder: string[] = [];
    for (const [id, statuses] of acked) {
      const got = arrived.get(id) ?? [];
      for (const s of statuses) if (!got.includes(s)) lost.push(`${id} ${s}`);
      // First arrivals in the order the reports were accepted; a repeat never after a later report.
      const firsts = [...new Set(got)];
      if (firsts.slice(0, statuses.length).join() !== statuses.join()) outOfOrder.push(`${id}: ${got.join(" ")}`);
      for (let i = 1; i < got.length; i++)
        if (got[i] !== got[i - 1] && got.slice(i).includes(got[i - 1]!)) outOfOrder.push(`${id}: ${got.join(" ")}`);
    }
    expect(lost).toEqual([]);
    expect(outOfOrder).toEqual([]);
    const distinct = new Set(up.received.map((r) => JSON.stringify(r.body))).size;
    console.log(
      `relay kill -9: ${ackedCount} reports acknowledged, ${beforeRestart} delivered before the kill, ${up.received.length} deliveries in all, ${up.received.length - distinct} repeated (same ids) after the restart`,
    );
    expect(await restarted.stop()).toBe(0);
  });

  test("a relay setting that cannot work stops serve with one line naming it (exit 2), before anything is created", () => {
    const dir = tempDir();
    const r = Bun.spawnSync(
      [
        bin,
        "serve",
        "--port",
        "0",
        "--db",
        join(dir, "x.db"),
        "--relay-url",
        up.url,
        "--relay-omit",
        "error,random_id",
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    expect({ code: r.exitCode, err: r.stderr.toString().trim().split("\n") }).toEqual({
      code: 2,
      err: [
        "installstats: --relay-omit: random_id cannot be left out: the upstream needs random_id, execution_id, payload_version, type, nsapp, status to place a report, and the community service counts a failure without exit_code as a success",
      ],
    });
    const bad = Bun.spawnSync(
      [bin, "serve", "--port", "0", "--db", join(dir, "x.db"), "--relay-url", "telemetry.community-scripts.org"],
      { stdout: "pipe", stderr: "pipe" },
    );
    expect({ code: bad.exitCode, err: bad.stderr.toString().trim() }).toEqual({
      code: 2,
      err: 'installstats: --relay-url: must be an http:// or https:// URL such as https://example.org, got "telemetry.community-scripts.org"',
    });
    expect(readdirSync(dir)).toEqual([]);
  });

  test("installstats relay pause/resume/status act on a running server's outbox", async () => {
    const db = join(tempDir(), "pause.db");
    const server = await serve(db);
    const cli = (...args: string[]) => {
      const r = Bun.spawnSync([bin, "relay", ...args, "--db", db], { stdout: "pipe", stderr: "pipe" });
      expect(r.exitCode).toBe(0);
      return JSON.parse(r.stdout.toString()) as Record<string, unknown>;
    };
    expect(cli("pause")).toMatchObject({ action: "pause", paused: true });
    await until(async () => (await relayOf(server)).state === "paused", "the sender to pause");
    const before = up.received.length;
    for (const id of ["p1", "p2", "p3"])
      expect((await fetch(`${server.url}/telemetry`, { method: "POST", body: v2(id, "installing") })).status).toBe(201);
    expect(cli()).toMatchObject({ paused: true, entries: 3, sent: 0 });
    await Bun.sleep(1200); // two rounds of the sender: nothing goes while paused
    expect(up.received.length).toBe(before);
    expect(cli("resume")).toMatchObject({ action: "resume", paused: false });
    await until(() => up.received.length === before + 3, "the paused reports to go");
    // The upstream took them; the server records it once their answers came back.
    await until(() => cli("status").entries === 0, "the outbox to empty");
    expect(cli("status")).toMatchObject({ entries: 0, sent: 3, oldest_age_s: null });
    const wrong = Bun.spawnSync([bin, "relay", "flush", "--db", db], { stdout: "pipe", stderr: "pipe" });
    expect({ code: wrong.exitCode, err: wrong.stderr.toString().trim() }).toEqual({
      code: 2,
      err: "installstats: relay takes one of status, pause, resume, requeue, discard, discard-refused, e.g. installstats relay pause",
    });
    expect(await server.stop()).toBe(0);
  });
});
