// Nodes behind pgbouncer (issue 17): Debian's pgbouncer on 127.0.0.1 between the nodes and a
// throwaway PostgreSQL server. In transaction pooling (server connections shared transaction by
// transaction) the engine keeps no session state: its locks are transaction-level (batches,
// migrations, job leases), and with ?prepare=false (pgbouncer 1.18 keeps no prepared statements
// across transactions) everything works; in session pooling it works as it is.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { openEngine } from "../../src/store/open.ts";
import { client, compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { startReport } from "../helpers/app.ts";
import { createDatabase, startPgbouncer, startPostgres, type PgServer, type Pooler } from "../helpers/postgres.ts";

setDefaultTimeout(180_000);

let pg: PgServer;
let bin: string;
const poolers: Pooler[] = [];
beforeAll(async () => {
  [pg, bin] = await Promise.all([startPostgres(), compiledBinary()]);
});
afterAll(async () => {
  for (const p of poolers) await p.stop();
  await pg?.stop();
});

const telemetry = (id: string, status: string) =>
  JSON.stringify({ payload_version: 2, random_id: id, execution_id: id, type: "lxc", nsapp: "jellyfin", status });
const post = (node: RunningServer, path: string, body: string) =>
  fetch(`${node.url}${path}`, { method: "POST", body, headers: { "content-type": "application/json" } });

/** Both protocols across two nodes, the same reports on both at once, a burst; every acknowledged report stored, verify clean. */
async function ingestAcross(a: RunningServer, b: RunningServer, url: string, direct: string): Promise<void> {
  // The same start report on both nodes at once: one 201, one 200.
  const answers = await Promise.all(
    Array.from({ length: 20 }, async (_, i) => {
      const [x, y] = await Promise.all([
        post(a, "/telemetry", telemetry(`same-${i}`, "installing")),
        post(b, "/telemetry", telemetry(`same-${i}`, "installing")),
      ]);
      return [x.status, y.status].sort().join(",");
    }),
  );
  expect(new Set(answers)).toEqual(new Set(["200,201"]));
  // A final status held on one node, its start on the other.
  expect(
    (
      await post(
        a,
        "/upload/updatestatus",
        JSON.stringify({ random_id: "held-1", status: "failed", error: "exit code 2" }),
      )
    ).status,
  ).toBe(202);
  expect((await post(b, "/upload", JSON.stringify(startReport("held-1")))).status).toBe(201);
  // scripts/client.sh, both protocols, one install's reports split between the nodes.
  await client(a.url, ["--protocol", "v2", "--id", "cs-1", "start"]);
  await client(b.url, ["--protocol", "v2", "--id", "cs-1", "progress", "validation"]);
  await client(a.url, ["--protocol", "v2", "--id", "cs-1", "final", "failed", "100"], { POST_TO_API_DONE: "true" }); // the start was sent by another process of this run
  await client(b.url, ["--id", "cs-2", "start"]);
  await client(a.url, ["--id", "cs-2", "update", "done"]);
  const one = (await (await fetch(`${b.url}/api/installs/cs-1`)).json()) as { outcome: string };
  const two = (await (await fetch(`${a.url}/api/installs/cs-2`)).json()) as { outcome: string };
  expect([one.outcome, two.outcome]).toEqual(["failed", "success"]);
  // A burst: 400 reports from 16 clients alternating between the nodes, all acknowledged.
  const statuses: number[] = [];
  await Promise.all(
    Array.from({ length: 16 }, async (_, c) => {
      for (let i = 0; i < 25; i++)
        statuses.push(
          (await post((c + i) % 2 ? a : b, "/telemetry", telemetry(`burst-${c}-${i}`, "installing"))).status,
        );
    }),
  );
  expect(statuses.filter((s) => s !== 201)).toEqual([]);
  const check = postgres(direct, { max: 1, onnotice: () => {} });
  try {
    const [row] = await check<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM executions WHERE random_id LIKE 'burst-%'`;
    expect(row!.n).toBe(400);
  } finally {
    await check.end();
  }
  const verify = Bun.spawnSync([bin, "verify", "--db", url], { stdout: "pipe", stderr: "pipe" });
  const report = JSON.parse(verify.stdout.toString()) as { ok: boolean };
  expect({ code: verify.exitCode, ok: report.ok }).toEqual({ code: 0, ok: true });
}

/** A pgbouncer in `mode` and a new database behind it: its URL through the pooler, and directly. */
async function pooled(
  mode: "session" | "transaction",
  size: number,
  name: string,
): Promise<{ url: string; direct: string }> {
  const pooler = await startPgbouncer(pg, mode, size);
  poolers.push(pooler);
  return { url: pooler.url(name), direct: await createDatabase(pg, name) };
}

/** Two compiled nodes on `url`, started together, stopped after `fn`. */
async function withNodes(url: string, fn: (a: RunningServer, b: RunningServer) => Promise<void>): Promise<void> {
  const [a, b] = await Promise.all([
    startServer(bin, ["--db", url, "--rate-limit", "0"]),
    startServer(bin, ["--db", url, "--rate-limit", "0"]),
  ]);
  try {
    await fn(a, b);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

describe("nodes through pgbouncer", () => {
  test("transaction pooling, ?prepare=false: three nodes start together (migrations once), a job round runs on one, two compiled nodes ingest both protocols, verify clean", async () => {
    const through = await pooled("transaction", 4, "pooled");
    const { direct } = through;
    const url = `${through.url}?prepare=false`;

    // Migrations and job leases through the pooler: transaction-level locks.
    const engines = await Promise.all(
      [1, 2, 3].map(() => openEngine(url, { durability: "full", migrate: true, create: true })),
    );
    try {
      const check = postgres(direct, { max: 1, onnotice: () => {} });
      const [applied] = await check<{ n: number }[]>`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`;
      await check.end();
      const journal = (await Bun.file(
        new URL("../../drizzle/postgres/meta/_journal.json", import.meta.url),
      ).json()) as { entries: unknown[] };
      expect(applied!.n).toBe(journal.entries.length);
      let runs = 0;
      const t0 = Date.UTC(2026, 10, 26, 12);
      const round = async () => {
        runs++;
        await Bun.sleep(300);
        return "done";
      };
      const results = await Promise.all(engines.map((e) => e.store.leaseJob("fold-rollups", 60_000, t0, round)));
      expect(results.filter((r) => r === "done")).toHaveLength(1);
      expect(await engines[1]!.store.leaseJob("fold-rollups", 60_000, t0 + 1000, round)).toBeNull(); // not due
      expect(await engines[2]!.store.leaseJob("fold-rollups", 60_000, t0 + 61_000, round)).toBe("done"); // due again
      expect(runs).toBe(2);
    } finally {
      for (const e of engines) await e.close();
    }

    await withNodes(url, async (a, b) => {
      await ingestAcross(a, b, url, direct);
      expect(a.stderr() + b.stderr()).not.toContain('"level":"error"');
    });
  });

  test("transaction pooling with prepared statements on: a node refuses to start, or refuses writes with 503, naming the fix; never a 500, never acknowledged unstored", async () => {
    const { url, direct } = await pooled("transaction", 4, "prepared");
    // Which of the two happens depends on which server connection each statement meets: a node
    // whose start-up reads miss their statement exits (3) with the fix; one that starts refuses
    // the writes that miss theirs.
    const started = await Promise.allSettled([0, 1].map(() => startServer(bin, ["--db", url, "--rate-limit", "0"])));
    const nodes = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    try {
      for (const s of started)
        if (s.status === "rejected") {
          expect(String(s.reason)).toContain("server exited (3)");
          expect(String(s.reason)).toContain("add ?prepare=false to the URL");
          expect(String(s.reason)).not.toContain("unexpected error");
        }
      if (nodes.length === 0) return;
      const answers: { id: string; status: number }[] = [];
      await Promise.all(
        Array.from({ length: 16 }, async (_, c) => {
          for (let i = 0; i < 20; i++) {
            const id = `p-${c}-${i}`;
            answers.push({
              id,
              status: (await post(nodes[(c + i) % nodes.length]!, "/telemetry", telemetry(id, "installing"))).status,
            });
          }
        }),
      );
      expect(answers.filter((x) => x.status !== 201 && x.status !== 503)).toEqual([]);
      const check = postgres(direct, { max: 1, onnotice: () => {} });
      const stored = new Set((await check<{ id: string }[]>`SELECT random_id AS id FROM executions`).map((r) => r.id));
      await check.end();
      expect(answers.filter((x) => x.status === 201 && !stored.has(x.id))).toEqual([]);
      const refused = answers.filter((x) => x.status === 503).length;
      if (refused > 0) expect(nodes.map((n) => n.stderr()).join("")).toContain("add ?prepare=false to the URL");
    } finally {
      await Promise.all(nodes.map((n) => n.stop()));
    }
  });

  test("session pooling: as it is (prepared statements and all), enough server connections for every node's pool", async () => {
    const { url, direct } = await pooled("session", 40, "sessions");
    await withNodes(url, (a, b) => ingestAcross(a, b, url, direct));
  });
});
