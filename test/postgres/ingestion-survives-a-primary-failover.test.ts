// High availability (issue 17): two compiled nodes given a multi-host URL
// (postgres://primary,replica/db?target_session_attrs=read-write) keep ingesting through a
// primary failover: the primary crashes (pg_ctl stop -m immediate), the streaming replica is
// promoted (pg_ctl promote). Reports sent during the switch get 503 with Retry-After, never
// another 5xx and never a 2xx that was not committed; after the promotion writes succeed again
// without restarting the nodes. The primary replicates synchronously (synchronous_standby_names),
// as an HA setup that loses nothing acknowledged must.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { compiledBinary, sendStart, startServer, type Answer } from "../helpers/binary.ts";
import { crash, createDatabase, promote, startPostgres, startReplica, type PgServer } from "../helpers/postgres.ts";

setDefaultTimeout(180_000);

let primary: PgServer;
let replica: PgServer;
let bin: string;
beforeAll(async () => {
  [primary, bin] = await Promise.all([startPostgres(), compiledBinary()]);
  await createDatabase(primary, "ha");
  replica = await startReplica(primary);
  // After the base backup, so the replica (the next primary) does not wait for a standby of its own.
  const admin = postgres(primary.url, { max: 1, onnotice: () => {} });
  await admin`ALTER SYSTEM SET synchronous_standby_names = '*'`;
  await admin`SELECT pg_reload_conf()`;
  await admin.end();
});
afterAll(async () => {
  await replica?.stop();
  await primary?.stop();
});

describe("a primary failover under load", () => {
  test("503 with Retry-After during the switch, nothing acknowledged lost, writes again after the promotion without a restart", async () => {
    const url = `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${replica.port}/ha?target_session_attrs=read-write`;
    // One node also reads from the replica (--read-db), which becomes the primary.
    const replicaUrl = `postgres://postgres@127.0.0.1:${replica.port}/ha`;
    const nodes = await Promise.all([
      startServer(bin, ["--db", url, "--read-db", replicaUrl, "--rate-limit", "0"]),
      startServer(bin, ["--db", url, "--rate-limit", "0"]),
    ]);
    const answers: Answer[] = [];
    let stop = false;
    const clients = Array.from({ length: 8 }, async (_, c) => {
      for (let i = 0; !stop; i++) {
        answers.push(await sendStart(nodes[(c + i) % 2]!, `ha-${c}-${i}`));
        await Bun.sleep(20);
      }
    });
    // And reads go on: the read API answers 200 or 503, never another 5xx.
    const reads: number[] = [];
    const reader = (async () => {
      for (let i = 0; !stop; i++) {
        const res = await fetch(`${nodes[i % 2]!.url}/api/stats/summary`, { signal: AbortSignal.timeout(5000) }).catch(
          () => null,
        );
        reads.push(res?.status ?? 0);
        await res?.arrayBuffer();
        await Bun.sleep(50);
      }
    })();
    try {
      await Bun.sleep(1500);
      const crashedAt = Date.now();
      await crash(primary);
      await Bun.sleep(8000); // an HA manager takes some seconds to decide (patroni: ttl 30 s by default)
      await promote(replica);
      const promotedAt = Date.now();
      // Until writes have succeeded for a while after the promotion (or a minute has passed).
      for (let waited = 0; waited < 60_000; waited += 250) {
        await Bun.sleep(250);
        const after = answers.filter((a) => a.at > promotedAt);
        if (after.length >= 100 && after.slice(-50).every((a) => a.status === 201)) break;
      }
      stop = true;
      await Promise.all([...clients, reader]);

      const before = answers.filter((a) => a.at < crashedAt);
      const during = answers.filter((a) => a.at >= crashedAt && a.at <= promotedAt);
      const after = answers.filter((a) => a.at > promotedAt);
      const tally = (xs: Answer[]) =>
        Object.fromEntries(
          [...new Set(xs.map((a) => a.status))].map((s) => [s, xs.filter((a) => a.status === s).length]),
        );
      const firstOk = after.find((a) => a.status === 201);
      const slowest = (xs: Answer[]) => Math.max(0, ...xs.map((a) => a.ms));
      console.log(
        JSON.stringify({
          reads: Object.fromEntries([...new Set(reads)].map((r) => [r, reads.filter((x) => x === r).length])),
          before: tally(before),
          during: tally(during),
          after: tally(after),
          switchMs: promotedAt - crashedAt,
          slowestAnswerMs: { before: slowest(before), during: slowest(during), after: slowest(after) },
          writesAgainAfterPromotionMs: firstOk ? firstOk.at + firstOk.ms - promotedAt : null,
        }),
      );

      // Only 201 (stored) or 503 with Retry-After; every request answered.
      expect(answers.filter((a) => a.status !== 201 && a.status !== 503).map((a) => a.status)).toEqual([]);
      expect(answers.filter((a) => a.status === 503 && a.retryAfter === null)).toEqual([]);
      expect(during.some((a) => a.status === 503)).toBe(true);
      // Answered before the clients give up (curl -m 5), also during the switch.
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(4500);
      // Writes again, on the same node processes.
      expect(after.slice(-50).every((a) => a.status === 201)).toBe(true);
      for (const n of nodes) expect(n.proc.exitCode).toBeNull();
      // Every acknowledged report is on the new primary.
      const check = postgres(replica.url.replace(/\/postgres$/, "/ha"), { max: 1, onnotice: () => {} });
      try {
        const stored = new Set(
          (await check<{ id: string }[]>`SELECT random_id AS id FROM executions`).map((r) => r.id),
        );
        expect(answers.filter((a) => a.status === 201 && !stored.has(a.id)).map((a) => a.id)).toEqual([]);
      } finally {
        await check.end();
      }
      expect(reads.filter((s) => s !== 200 && s !== 503)).toEqual([]);
      const health = await fetch(`${nodes[0]!.url}/healthz`);
      expect(health.status).toBe(200);
      // The replica, now the primary, still serves the reads of the node that read from it.
      expect(
        ((await health.json()) as { storage: { database: { replica: unknown } } }).storage.database.replica,
      ).toMatchObject({ reads_from: "replica", lag_s: 0 });
      const verify = Bun.spawnSync([bin, "verify", "--db", url], { stdout: "pipe", stderr: "pipe" });
      expect({ code: verify.exitCode, ok: (JSON.parse(verify.stdout.toString()) as { ok: boolean }).ok }).toEqual({
        code: 0,
        ok: true,
      });
    } finally {
      stop = true;
      await Promise.all([...clients, reader]);
      await Promise.all(nodes.map((n) => n.stop()));
    }
  });
});
