// Reads from a streaming replica (--read-db): a compiled node on a primary and its replica (both
// throwaway servers on 127.0.0.1). Reads come from the replica and see what was written; health
// and metrics name both databases and the lag; with the replica gone, reads go to the primary.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { startPostgres, startReplica, type PgServer } from "../helpers/postgres.ts";

setDefaultTimeout(120_000);

let primary: PgServer;
let replica: PgServer;
let bin: string;
let node: RunningServer | undefined;

beforeAll(async () => {
  [primary, bin] = await Promise.all([startPostgres(), compiledBinary()]);
  // The schema first, so the replica starts with it.
  const migrated = Bun.spawnSync([bin, "migrate", "--db", primary.url], { stdout: "pipe", stderr: "pipe" });
  if (migrated.exitCode !== 0) throw new Error(migrated.stderr.toString());
  replica = await startReplica(primary);
});

afterAll(async () => {
  if (node && node.proc.exitCode === null) await node.stop();
  await replica?.stop();
  await primary?.stop();
});

interface Health {
  status: string;
  storage: {
    database: {
      engine: string;
      location: string;
      replica: { location: string; lag_s: number | null; reads_from: string; problem: string | null } | null;
    };
  };
}

const health = async (n: RunningServer) => (await (await fetch(`${n.url}/healthz`)).json()) as Health;

describe("reads from a streaming replica", () => {
  test("reads come from the replica and see what the primary took; health and metrics say where reads go and the lag", async () => {
    node = await startServer(bin, ["--db", primary.url, "--read-db", replica.url, "--rate-limit", "0"]);
    const h = await health(node);
    expect(h.storage.database).toMatchObject({
      engine: "postgres",
      location: primary.url,
      replica: { location: replica.url, reads_from: "replica", problem: null },
    });
    const post = await fetch(`${node.url}/upload`, {
      method: "POST",
      body: JSON.stringify({ random_id: "r-1", type: "lxc", nsapp: "jellyfin", status: "installing" }),
    });
    expect(post.status).toBe(201);
    // The replica follows within a moment: the read through the node shows the install.
    let seen = 0;
    for (let i = 0; i < 50 && seen === 0; i++) {
      seen = (await fetch(`${node.url}/api/installs/r-1`)).status === 200 ? 1 : 0;
      if (seen === 0) await Bun.sleep(100);
    }
    expect(seen).toBe(1);
    // It was the replica that answered: the row is there, read-only.
    const direct = postgres(replica.url, { max: 1, onnotice: () => {} });
    const [row] = await direct<
      { n: number; standby: boolean }[]
    >`SELECT count(*)::int AS n, pg_is_in_recovery() AS standby FROM executions WHERE random_id = 'r-1'`;
    await direct.end();
    expect(row).toEqual({ n: 1, standby: true });
    // With the replica's replay paused, a new install is on the primary only: the node does not
    // see it yet (its reads come from the replica), and does once replay goes on.
    const control = postgres(replica.url, { max: 1, onnotice: () => {} });
    await control`SELECT pg_wal_replay_pause()`;
    try {
      expect(
        (
          await fetch(`${node.url}/upload`, {
            method: "POST",
            body: JSON.stringify({ random_id: "r-2", type: "lxc", nsapp: "jellyfin", status: "installing" }),
          })
        ).status,
      ).toBe(201);
      expect((await fetch(`${node.url}/api/installs/r-2`)).status).toBe(404);
    } finally {
      await control`SELECT pg_wal_replay_resume()`;
      await control.end();
    }
    let caughtUp = 404;
    for (let i = 0; i < 50 && caughtUp !== 200; i++) {
      caughtUp = (await fetch(`${node.url}/api/installs/r-2`)).status;
      if (caughtUp !== 200) await Bun.sleep(100);
    }
    expect(caughtUp).toBe(200);
    const metrics = await (await fetch(`${node.url}/metrics`)).text();
    expect(metrics).toMatch(/^installstats_reads_from_replica 1$/m);
    expect(metrics).toMatch(/^installstats_replica_lag_seconds \d+(\.\d+)?(e-?\d+)?$/m);
  });

  test("a replica further behind than --read-max-lag: reads go to the primary, and come back when it catches up", async () => {
    const strict = await startServer(bin, [
      "--db",
      primary.url,
      "--read-db",
      replica.url,
      "--read-max-lag",
      "1s",
      "--rate-limit",
      "0",
    ]);
    const control = postgres(replica.url, { max: 1, onnotice: () => {} });
    try {
      await control`SELECT pg_wal_replay_pause()`;
      expect(
        (
          await fetch(`${strict.url}/upload`, {
            method: "POST",
            body: JSON.stringify({ random_id: "r-3", type: "lxc", nsapp: "plex", status: "installing" }),
          })
        ).status,
      ).toBe(201);
      let h = await health(strict);
      for (let i = 0; i < 60 && h.storage.database.replica?.reads_from !== "primary"; i++) {
        await Bun.sleep(100);
        h = await health(strict);
      }
      expect(h.storage.database.replica?.problem).toMatch(
        /^replica \d+\.\d s behind \(bound 1 s\): reads go to the primary$/,
      );
      expect((await fetch(`${strict.url}/api/installs/r-3`)).status).toBe(200);
      await control`SELECT pg_wal_replay_resume()`;
      for (let i = 0; i < 60 && h.storage.database.replica?.reads_from !== "replica"; i++) {
        await Bun.sleep(100);
        h = await health(strict);
      }
      expect(h.storage.database.replica).toMatchObject({ reads_from: "replica", problem: null });
    } finally {
      await control`SELECT pg_wal_replay_resume()`.catch(() => {});
      await control.end();
      await strict.stop();
    }
  });

  test("with the replica gone, reads go to the primary and still answer; /healthz stays ok and says why", async () => {
    await replica.stop();
    let h = await health(node!);
    for (let i = 0; i < 40 && h.storage.database.replica?.reads_from !== "primary"; i++) {
      await Bun.sleep(100);
      h = await health(node!);
    }
    expect(h.status).toBe("ok");
    expect(h.storage.database.replica).toMatchObject({ reads_from: "primary", lag_s: null });
    expect(h.storage.database.replica?.problem).toStartWith("replica does not answer");
    expect((await fetch(`${node!.url}/api/installs/r-1`)).status).toBe(200);
    expect((await fetch(`${node!.url}/api/stats/summary`)).status).toBe(200);
    expect(await (await fetch(`${node!.url}/metrics`)).text()).toMatch(/^installstats_reads_from_replica 0$/m);
  });

  test("--read-db with an SQLite --db: one line naming the mistake, and nothing left behind", () => {
    const dir = tempDir("installstats-read-db-");
    const file = join(dir, "never-made.db");
    const r = Bun.spawnSync([bin, "serve", "--port", "0", "--db", file, "--read-db", "postgres://127.0.0.1:1/x"], {
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr.toString().trim()).toBe(
      `installstats: --read-db names a PostgreSQL replica, but --db ${file} is an SQLite file; give --db the primary's postgres:// URL, or leave --read-db unset`,
    );
    expect(readdirSync(dir)).toEqual([]);
  });
});
