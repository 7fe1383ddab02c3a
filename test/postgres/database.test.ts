// The PostgreSQL engine's database: connection errors as one clear line, migrations applied once
// when several nodes start together, a newer schema refused. A throwaway server on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { openPostgres, redacted } from "../../src/store/postgres/database.ts";
import { DatabaseOpenError } from "../../src/store/engine.ts";
import { startPostgres, type PgServer } from "../helpers/postgres.ts";

let server: PgServer;
let admin: postgres.Sql;
let n = 0;
beforeAll(async () => {
  server = await startPostgres();
  admin = postgres(server.url, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

/** A fresh, empty database on the server; its URL. */
async function freshDatabase(): Promise<string> {
  const name = `t${++n}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  return server.url.replace(/\/postgres$/, `/${name}`);
}

describe("the PostgreSQL engine's database", () => {
  test("three nodes starting together on an empty database: each opens it, the migrations run once", async () => {
    const url = await freshDatabase();
    const opened = await Promise.all([1, 2, 3].map(() => openPostgres(url, { durability: "full", migrate: true })));
    const check = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const applied = await check<{ hash: string }[]>`SELECT hash FROM drizzle.__drizzle_migrations`;
      const journal = (await Bun.file(new URL("../../drizzle/postgres/meta/_journal.json", import.meta.url)).json()) as { entries: unknown[] };
      expect(applied).toHaveLength(journal.entries.length);
      const tables = await check<{ name: string }[]>`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`;
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

  test("no server, a wrong database: one line naming the cause; the password is never shown", async () => {
    const down = `postgres://installstats:s3cret@127.0.0.1:1/x`;
    const refused = (await openPostgres(down, { durability: "full", migrate: true }).catch((e: unknown) => e)) as Error;
    expect(refused.message).toBe("cannot connect to PostgreSQL at postgres://installstats:***@127.0.0.1:1/x: connection refused (is the server running, and listening there?)");
    const missing = (await openPostgres(server.url.replace(/\/postgres$/, "/nosuchdb"), { durability: "full", migrate: true }).catch((e: unknown) => e)) as Error;
    expect(missing.message).toEndWith("the database does not exist (create it: createdb)");
    expect(redacted("postgres://u:p%40ss@h/db")).toBe("postgres://u:***@h/db");
  });
});
