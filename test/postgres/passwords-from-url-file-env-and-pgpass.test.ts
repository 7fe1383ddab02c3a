// Passwords for the PostgreSQL engine (issue 17): from the URL, --db-password-file (a file holding
// only the password), PGPASSWORD, or libpq's password file (PGPASSFILE or ~/.pgpass: wildcards,
// escapes, ignored unless mode 0600 or stricter, and then said so); the standard PGHOST, PGPORT,
// PGUSER and PGDATABASE fill in what the URL leaves out. A password is never printed: not in
// messages, logs, /healthz, /metrics or --help. A throwaway server on 127.0.0.1 that asks for
// passwords (scram-sha-256).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { matchPassLine, parsePassFile } from "../../src/store/postgres/passwords.ts";
import { compiledBinary, startServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { requirePasswords, startPostgres, type PgServer } from "../helpers/postgres.ts";

setDefaultTimeout(60_000);

const RIGHT = "right-pw";
/** A password with every character the password file escapes. */
const ODD = "a:b\\c*d";

let server: PgServer;
let at: string;
let bin: string;
beforeAll(async () => {
  [server, bin] = await Promise.all([startPostgres(), compiledBinary()]);
  const admin = postgres(server.url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE ROLE installstats LOGIN PASSWORD '${RIGHT}'`);
  await admin.unsafe(`CREATE ROLE odd LOGIN PASSWORD '${ODD.replaceAll("'", "''")}'`);
  await admin`CREATE DATABASE installstats OWNER installstats`;
  await admin`CREATE DATABASE odd OWNER odd`;
  await admin.end();
  requirePasswords(server);
  await Bun.sleep(300); // the reload is asynchronous
  at = `127.0.0.1:${server.port}/installstats`;
});
afterAll(() => server?.stop());

const main = new URL("../../src/main.ts", import.meta.url).pathname;
const migrate = (env: Record<string, string>, ...args: string[]) => {
  const r = Bun.spawnSync(["bun", main, "migrate", ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: tempDir("installstats-home-"), ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode, out: (r.stdout.toString() + r.stderr.toString()).trim() };
};

/** A file in a fresh directory with `text` and `mode`. */
function file(text: string, mode: number, name = "secret"): string {
  const path = join(tempDir("installstats-pw-"), name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

describe("PostgreSQL passwords", () => {
  test("in the URL (from INSTALLSTATS_DB), or in PGPASSWORD; shown as *** or not at all", () => {
    expect(migrate({ INSTALLSTATS_DB: `postgres://installstats:${RIGHT}@${at}` })).toEqual({
      code: 0,
      out: `postgres://installstats:***@${at}: migrations applied`,
    });
    expect(migrate({ PGPASSWORD: RIGHT }, "--db", `postgres://installstats@${at}`)).toEqual({
      code: 0,
      out: `postgres://installstats@${at}: migrations applied`,
    });
  });

  test("--db-password-file and INSTALLSTATS_DB_PASSWORD_FILE: a file holding only the password (its final newline is not part of it), before PGPASSWORD", () => {
    const secret = file(`${RIGHT}\n`, 0o400);
    expect(
      migrate({ PGPASSWORD: "wrong" }, "--db", `postgres://installstats@${at}`, "--db-password-file", secret),
    ).toEqual({ code: 0, out: `postgres://installstats@${at}: migrations applied` });
    expect(
      migrate({ INSTALLSTATS_DB_PASSWORD_FILE: secret, INSTALLSTATS_DB: `postgres://installstats@${at}` }).code,
    ).toBe(0);
    expect(migrate({}, "--db", `postgres://installstats@${at}`, "--db-password-file", "/nowhere/secret")).toEqual({
      code: 3,
      out: "installstats: cannot read the password file /nowhere/secret (--db-password-file or INSTALLSTATS_DB_PASSWORD_FILE): no such file",
    });
  });

  test("libpq's password file (PGPASSFILE, else ~/.pgpass): the first matching line, * for anything, \\: and \\\\ escaped", () => {
    const escaped = ODD.replaceAll("\\", "\\\\").replaceAll(":", "\\:");
    const lines = [
      "# hostname:port:database:username:password",
      `db.example:${server.port}:*:odd:not-this-one`,
      `127.0.0.1:${server.port + 1}:*:odd:nor-this-one`,
      `127.0.0.1:*:odd:odd:${escaped}`,
      `*:*:*:installstats:${RIGHT}`,
    ].join("\n");
    const passfile = file(lines, 0o600);
    expect(migrate({ PGPASSFILE: passfile }, "--db", `postgres://odd@127.0.0.1:${server.port}/odd`).code).toBe(0);
    expect(migrate({ PGPASSFILE: passfile }, "--db", `postgres://installstats@${at}`).code).toBe(0);
    // ~/.pgpass when PGPASSFILE is not set.
    const home = tempDir("installstats-home-");
    writeFileSync(join(home, ".pgpass"), lines);
    chmodSync(join(home, ".pgpass"), 0o600);
    expect(migrate({ HOME: home }, "--db", `postgres://odd@127.0.0.1:${server.port}/odd`).code).toBe(0);
    // The parser as libpq reads a line: a * that is escaped is a star, not a wildcard.
    const [line] = parsePassFile("h\\*:5432:d:u:p\\:w");
    expect(line).toMatchObject({ fields: ["h*", "5432", "d", "u"], password: "p:w", line: 1 });
    expect(matchPassLine([line!], { hosts: ["h1"], ports: [5432], database: "d", user: "u" })).toBeNull();
  });

  test("a password file others may read is ignored, and said so (as libpq does); the failure names where the password came from", () => {
    const passfile = file(`*:*:*:installstats:${RIGHT}\n`, 0o644);
    const r = migrate({ PGPASSFILE: passfile }, "--db", `postgres://installstats@${at}`);
    expect(r.code).toBe(3);
    expect(r.out.split("\n")).toEqual([
      `installstats: warning: password file ${passfile} is ignored: others may read it (mode 0644); chmod 600 it, as libpq requires`,
      `installstats: cannot connect to PostgreSQL at postgres://installstats@${at}: authentication failed for user "installstats" (the password came from none (${passfile} ignored: mode 0644); passwords come from the URL, --db-password-file, PGPASSWORD or ~/.pgpass)`,
    ]);
    chmodSync(passfile, 0o600);
    expect(migrate({ PGPASSFILE: passfile }, "--db", `postgres://installstats@${at}`).code).toBe(0);
  });

  test("a wrong password: one line with the cause and its source, the password not in it", () => {
    expect(migrate({ INSTALLSTATS_DB: `postgres://installstats:wrong-pw@${at}` })).toEqual({
      code: 3,
      out: `installstats: cannot connect to PostgreSQL at postgres://installstats:***@${at}: authentication failed for user "installstats" (the password came from the URL; passwords come from the URL, --db-password-file, PGPASSWORD or ~/.pgpass)`,
    });
    expect(migrate({ PGPASSWORD: "wrong-pw" }, "--db", `postgres://installstats@${at}`).out).toContain(
      "(the password came from PGPASSWORD;",
    );
  });

  test("PGHOST, PGPORT, PGUSER and PGDATABASE fill in what the URL leaves out", () => {
    const env = {
      PGHOST: "127.0.0.1",
      PGPORT: String(server.port),
      PGUSER: "installstats",
      PGDATABASE: "installstats",
      PGPASSWORD: RIGHT,
    };
    expect(migrate(env, "--db", "postgres://")).toEqual({ code: 0, out: "postgres://: migrations applied" });
    const wrong = migrate({ ...env, PGPASSWORD: "wrong-pw" }, "--db", "postgres://");
    expect(wrong.out).toContain(
      `at postgres:// (installstats@127.0.0.1:${server.port}/installstats): authentication failed`,
    );
  });

  test("never printed: not in the log, /healthz, /metrics or --help of a serving node", async () => {
    const secret = file(RIGHT, 0o400);
    const node = await startServer(
      bin,
      [
        "--db",
        `postgres://installstats@${at}`,
        "--read-db",
        `postgres://installstats:${RIGHT}@${at}`,
        "--log-level",
        "debug",
      ],
      {
        INSTALLSTATS_DB_PASSWORD_FILE: secret,
      },
    );
    try {
      const health = await (await fetch(`${node.url}/healthz`)).text();
      expect(health).toContain(`postgres://installstats:***@${at}`);
      const metrics = await (await fetch(`${node.url}/metrics`)).text();
      const help = Bun.spawnSync([bin, "serve", "--help"], {
        env: { PATH: process.env.PATH ?? "", INSTALLSTATS_DB_PASSWORD_FILE: secret },
      }).stdout.toString();
      expect(help).toContain("--db-password-file");
      for (const text of [health, metrics, help, node.stderr()]) expect(text).not.toContain(RIGHT);
    } finally {
      await node.stop();
    }
  });
});
