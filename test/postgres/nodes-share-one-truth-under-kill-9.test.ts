// Many nodes, one truth (issue 17): two compiled installstats nodes on one PostgreSQL database
// (a throwaway server on 127.0.0.1), driven over HTTP, one of them killed with SIGKILL under load.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { client, compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { startReport } from "../helpers/app.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";

setDefaultTimeout(120_000);

let pg: PgServer;
let bin: string;
let url: string;
let check: postgres.Sql;
let a: RunningServer;
let b: RunningServer;

const node = (db: string) => startServer(bin, ["--db", db, "--rate-limit", "0"]);

beforeAll(async () => {
  [pg, bin] = await Promise.all([startPostgres(), compiledBinary()]);
  url = await createDatabase(pg, "nodes");
  // Both start at once: the migrations run once (test/postgres/connection-errors-and-migrations-once.test.ts checks it closer).
  [a, b] = await Promise.all([node(url), node(url)]);
  check = postgres(url, { max: 1, onnotice: () => {} });
});

afterAll(async () => {
  await check?.end();
  for (const n of [a, b]) if (n && n.proc.exitCode === null) await n.stop();
  await pg?.stop();
});

const telemetry = (id: string, status: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    payload_version: 2,
    random_id: id,
    execution_id: id,
    type: "lxc",
    nsapp: "jellyfin",
    status,
    ...extra,
  });
const post = (server: RunningServer, path: string, body: string) =>
  fetch(`${server.url}${path}`, { method: "POST", body, headers: { "content-type": "application/json" } });

describe("two nodes on one PostgreSQL database", () => {
  test("the same start report on both nodes at once: one 201 and one 200 duplicate, every time", async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const body = telemetry(`same-${i}`, "installing");
        const [x, y] = await Promise.all([post(a, "/telemetry", body), post(b, "/telemetry", body)]);
        return [x.status, y.status].sort().join(",");
      }),
    );
    expect(new Set(answers)).toEqual(new Set(["200,201"]));
    const [row] = await check<{ n: number }[]>`SELECT count(*)::int AS n FROM executions WHERE random_id LIKE 'same-%'`;
    expect(row!.n).toBe(40);
  });

  test("a final status held on one node is applied when its start report arrives on the other", async () => {
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
    const install = (await (await fetch(`${a.url}/api/installs/held-1`)).json()) as { outcome: string; status: string };
    expect(install).toMatchObject({ status: "failed", outcome: "failed" });
  });

  test("both protocols by scripts/client.sh across both nodes, one install's reports split between them", async () => {
    await client(a.url, ["--protocol", "v2", "--id", "cs-1", "start"]);
    await client(b.url, ["--protocol", "v2", "--id", "cs-1", "progress", "validation"]);
    await client(a.url, ["--protocol", "v2", "--id", "cs-1", "final", "failed", "100"], { POST_TO_API_DONE: "true" }); // the start was sent by another process of this run
    // A retry: a new execution of the same install, on the other node.
    await client(b.url, ["--protocol", "v2", "--id", "cs-1", "--execution-id", "cs-1-retry", "install", "success"]);
    await client(a.url, ["--id", "cs-2", "start"]);
    await client(b.url, ["--id", "cs-2", "update", "done"]);
    const one = (await (await fetch(`${b.url}/api/installs/cs-1`)).json()) as {
      executions: { execution_id: string; attempt: number; outcome: string }[];
    };
    expect(one.executions.map((e) => [e.execution_id, e.attempt, e.outcome])).toEqual([
      ["cs-1", 1, "failed"],
      ["cs-1-retry", 2, "success"],
    ]);
    const two = (await (await fetch(`${a.url}/api/installs/cs-2`)).json()) as { outcome: string };
    expect(two.outcome).toBe("success");
  });

  test("SIGKILL of one node under load: every acknowledged report is stored, rollups equal a recount (verify)", async () => {
    const acknowledged: string[] = [];
    let sent = 0;
    let killed = false;
    // 16 clients, each alternating between the nodes, until 600 reports were tried.
    await Promise.all(
      Array.from({ length: 16 }, async (_, c) => {
        for (let i = 0; sent < 600; i++) {
          const id = `load-${c}-${i}`;
          const target = (c + i) % 2 === 0 ? a : b;
          sent++;
          if (sent === 200 && !killed) {
            killed = true;
            b.proc.kill("SIGKILL");
          }
          const res = await post(
            target,
            "/telemetry",
            telemetry(id, i % 3 === 0 ? "success" : "installing", { type: i % 3 === 0 ? "pve" : "lxc" }),
          ).catch(() => null);
          if (res && res.status >= 200 && res.status < 300) acknowledged.push(id);
        }
      }),
    );
    await b.proc.exited;
    expect(acknowledged.length).toBeGreaterThan(300);
    const stored = new Set(
      (await check<{ id: string }[]>`SELECT random_id AS id FROM executions WHERE random_id LIKE 'load-%'`).map(
        (r) => r.id,
      ),
    );
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    // The killed node comes back; the cluster's data is whole.
    b = await node(url);
    const verify = Bun.spawnSync([bin, "verify", "--db", url], { stdout: "pipe", stderr: "pipe" });
    const report = JSON.parse(verify.stdout.toString()) as { ok: boolean; rollups: { mismatches: unknown[] } };
    expect({ code: verify.exitCode, ok: report.ok, mismatches: report.rollups.mismatches }).toEqual({
      code: 0,
      ok: true,
      mismatches: [],
    });
  });
});
