// The PostgreSQL engine's database: connection errors as one clear line, migrations applied once
// when several nodes start together, a newer schema refused. A throwaway server on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { openPostgres, redacted } from "../../src/store/postgres/database.ts";
import { RolledBackError, boundedWhileDown, markDown, transaction } from "../../src/store/postgres/transaction.ts";
import { DatabaseOpenError } from "../../src/store/engine.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";

// Commands are started as processes, several per test: more than 5 s under the full suite's load.
setDefaultTimeout(30_000);

let server: PgServer;
let n = 0;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server?.stop());

/** A fresh, empty database on the server; its URL. */
const freshDatabase = (): Promise<string> => createDatabase(server, `t${++n}`);

describe("the PostgreSQL engine's database", () => {
  test("three nodes starting together on an empty database: each opens it, the migrations run once", async () => {
    const url = await freshDatabase();
    const opened = await Promise.all([1, 2, 3].map(() => openPostgres(url, { durability: "full", migrate: true })));
    const check = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const applied = await check<{ hash: string }[]>`SELECT hash FROM drizzle.__drizzle_migrations`;
      const journal = (await Bun.file(
        new URL("../../drizzle/postgres/meta/_journal.json", import.meta.url),
      ).json()) as { entries: unknown[] };
      expect(applied).toHaveLength(journal.entries.length);
      const tables = await check<
        { name: string }[]
      >`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`;
      expect(tables.map((t) => t.name)).toContain("executions");
    } finally {
      await check.end();
      for (const o of opened) await o.sql.end();
    }
  });

  test("a schema from a newer release is refused with the way back", async () => {
    const url = await freshDatabase();
    await (await openPostgres(url, { durability: "full", migrate: true })).sql.end();
    const edit = postgres(url, { max: 1, onnotice: () => {} });
    await edit`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('future', ${Date.UTC(2999, 0, 1)})`;
    await edit.end();
    const failure = await openPostgres(url, { durability: "full", migrate: true }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(DatabaseOpenError);
    expect((failure as Error).message).toContain("was upgraded by a newer installstats (schema of 2999-01-01");
  });

  test("the commands: migrate, serve's log, backup and restore name the database without its password", async () => {
    const url = (await freshDatabase()).replace("postgres@", "postgres:s3cret@");
    const main = new URL("../../src/main.ts", import.meta.url).pathname;
    const run = (...args: string[]) => Bun.spawnSync(["bun", main, ...args], { stdout: "pipe", stderr: "pipe" });
    const migrated = run("migrate", "--db", url);
    expect({ code: migrated.exitCode, out: migrated.stdout.toString() }).toEqual({
      code: 0,
      out: `${url.replace("s3cret", "***")}: migrations applied\n`,
    });
    const backup = run("backup", "--db", url, "/tmp/never-written.db");
    expect({ code: backup.exitCode, err: backup.stderr.toString().trim() }).toEqual({
      code: 2,
      err: "installstats: backup copies an SQLite file; a PostgreSQL database is backed up by its server: pg_dump -Fc -d '<the --db URL>' -f installstats.dump",
    });
    expect(run("restore", "--db", url, "/tmp/never-read.db").stderr.toString()).toContain("pg_restore --clean");
    const server = Bun.spawn(["bun", main, "serve", "--host", "127.0.0.1", "--port", "0", "--db", url], {
      stdout: "pipe",
      stderr: "pipe",
    });
    let log = "";
    for await (const chunk of server.stderr) {
      log += new TextDecoder().decode(chunk);
      if (log.includes('"msg":"listening"')) break;
    }
    server.kill();
    await server.exited;
    expect(log).toContain(`"db":"${url.replace("s3cret", "***")}"`);
    expect(log).not.toContain("s3cret");
  });

  test("no server, a wrong database: one line naming the cause; the password is never shown", async () => {
    const down = `postgres://installstats:s3cret@127.0.0.1:1/x`;
    const refused = (await openPostgres(down, { durability: "full", migrate: true }).catch((e: unknown) => e)) as Error;
    expect(refused.message).toBe(
      "cannot connect to PostgreSQL at postgres://installstats:***@127.0.0.1:1/x: connection refused (is the server running, and listening there?)",
    );
    const missing = (await openPostgres(server.url.replace(/\/postgres$/, "/nosuchdb"), {
      durability: "full",
      migrate: true,
    }).catch((e: unknown) => e)) as Error;
    expect(missing.message).toEndWith("the database does not exist (create it: createdb)");
    expect(redacted("postgres://u:p%40ss@h/db")).toBe("postgres://u:***@h/db");
  });

  test("a transaction that failed along the way is an error at COMMIT (the server answers ROLLBACK), never a success", async () => {
    const url = await freshDatabase();
    const sql = postgres(url, { max: 2, onnotice: () => {} });
    try {
      await sql`CREATE TABLE t (n int)`;
      // A statement fails and its error is swallowed: the transaction is aborted, COMMIT rolls it back.
      const failure = await transaction(sql, async (tx) => {
        await tx`INSERT INTO t VALUES (1)`;
        await tx`SELECT 1 / 0`.catch(() => {});
        return "looked fine";
      }).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(RolledBackError);
      expect(await transaction(sql, async (tx) => (await tx`INSERT INTO t VALUES (2) RETURNING n`)[0]!.n)).toBe(2);
      expect((await sql`SELECT n FROM t`).map((r) => r.n)).toEqual([2]);
    } finally {
      await sql.end();
    }
  });
  test("a transaction waiting for a busy pool waits while the servers keep answering; servers silent for 3 s refuse it", async () => {
    const sql = postgres(await freshDatabase(), { max: 1, onnotice: () => {} });
    try {
      // One connection, 20 transactions of 0.25 s each at once: the last waits ~5 s, an answer every 0.25 s.
      const started = Date.now();
      const ends = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          transaction(sql, async (tx) => {
            await tx`SELECT pg_sleep(0.25)`;
            return i;
          }).then(
            () => Date.now() - started,
            (e: unknown) => `refused: ${(e as Error).message}`,
          ),
        ),
      );
      expect(ends.filter((e) => typeof e === "string")).toEqual([]);
      expect(Math.max(...(ends as number[]))).toBeGreaterThan(4500);

      // One statement holds the only connection for 4 s without an answer: a failover looks the same.
      const holder = transaction(sql, async (tx) => tx`SELECT pg_sleep(4)`);
      await Bun.sleep(100);
      const waitFrom = Date.now();
      const refused = await transaction(sql, async (tx) => tx`SELECT 1`).then(
        () => null,
        (e: unknown) => ({ code: (e as { code?: string }).code, after: Date.now() - waitFrom }),
      );
      expect(refused?.code).toBe("CONNECT_TIMEOUT");
      expect(refused!.after).toBeGreaterThanOrEqual(2800);
      expect(refused!.after).toBeLessThan(3800);
      await holder;
      // A connection that comes ends the down state the refusal began, for the other tests of this process.
      await transaction(sql, async (tx) => tx`SELECT 1`);
    } finally {
      await sql.end();
    }
  });
  test("while the servers are down a read gives up 3 s after it started, or 0.5 s after the servers were found down if that is later; one starting then after 0.5 s", async () => {
    const never = new Promise<never>(() => {});
    const outcome = (p: Promise<unknown>, from: number) =>
      p.then(
        () => -1,
        () => Date.now() - from,
      );
    const started = Date.now();
    const early = outcome(boundedWhileDown(never), started);
    const late = outcome(boundedWhileDown(never), started);
    await Bun.sleep(2000);
    // Found down 2 s after the reads started: they give up 3 s from their start, not 3 s from now.
    markDown();
    const foundAt = Date.now();
    const fresh = outcome(boundedWhileDown(never), foundAt);
    expect(await fresh).toBeLessThan(1500);
    const [a, b] = [await early, await late];
    expect(a).toBeGreaterThanOrEqual(2900);
    expect(a).toBeLessThan(4000);
    expect(b).toBeLessThan(4000);
    // A transaction that gets its connection ends the down state for the other tests of this process.
    const sql = postgres(await freshDatabase(), { max: 1, onnotice: () => {} });
    try {
      expect(await transaction(sql, async (tx) => (await tx`SELECT 1 AS one`)[0]!.one)).toBe(1);
    } finally {
      await sql.end();
    }
  });
});
