// Passwords for the PostgreSQL engine: from the URL or PGPASSWORD, never printed; a wrong one is
// one line naming the cause. A throwaway server on 127.0.0.1 that asks for passwords (scram).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { requirePasswords, startPostgres, type PgServer } from "../helpers/postgres.ts";

setDefaultTimeout(30_000);

let server: PgServer;
beforeAll(async () => {
  server = await startPostgres();
  const admin = postgres(server.url, { max: 1, onnotice: () => {} });
  await admin`CREATE ROLE installstats LOGIN PASSWORD 'right-pw'`;
  await admin`CREATE DATABASE installstats OWNER installstats`;
  await admin.end();
  requirePasswords(server);
  await Bun.sleep(300); // the reload is asynchronous
});
afterAll(() => server?.stop());

const main = new URL("../../src/main.ts", import.meta.url).pathname;
const migrate = (env: Record<string, string>, ...args: string[]) => {
  const r = Bun.spawnSync(["bun", main, "migrate", ...args], { env: { PATH: process.env.PATH ?? "", ...env }, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: (r.stdout.toString() + r.stderr.toString()).trim() };
};

describe("PostgreSQL passwords", () => {
  test("in the URL (from INSTALLSTATS_DB), or in PGPASSWORD; shown as *** or not at all", () => {
    const at = `127.0.0.1:${server.port}/installstats`;
    expect(migrate({ INSTALLSTATS_DB: `postgres://installstats:right-pw@${at}` })).toEqual({ code: 0, out: `postgres://installstats:***@${at}: migrations applied` });
    expect(migrate({ PGPASSWORD: "right-pw" }, "--db", `postgres://installstats@${at}`)).toEqual({ code: 0, out: `postgres://installstats@${at}: migrations applied` });
  });

  test("a wrong password: one line with the cause, the password not in it", () => {
    const at = `127.0.0.1:${server.port}/installstats`;
    const r = migrate({ INSTALLSTATS_DB: `postgres://installstats:wrong-pw@${at}` });
    expect(r).toEqual({
      code: 3,
      out: `installstats: cannot connect to PostgreSQL at postgres://installstats:***@${at}: authentication failed (check the user, and the password in the URL or in PGPASSWORD)`,
    });
  });
});
