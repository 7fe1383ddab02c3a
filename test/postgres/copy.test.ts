// installstats copy between engines (issue 17 item 4): an SQLite file into PostgreSQL and back
// into a new file, every execution the same field for field (the export of both files equal),
// verified at each end; run again, a copy finds everything there already.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { compiledBinary, tempDir } from "../helpers/binary.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";

setDefaultTimeout(180_000);

let pg: PgServer;
let bin: string;
let url: string;
beforeAll(async () => {
  [pg, bin] = await Promise.all([startPostgres(), compiledBinary()]);
  url = await createDatabase(pg, "copied");
});
afterAll(() => pg?.stop());

const run = (...args: string[]) => {
  const r = Bun.spawnSync([bin, ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};

describe("installstats copy", () => {
  test("SQLite -> PostgreSQL -> SQLite keeps every execution as it was, and verifies", () => {
    const dir = tempDir("installstats-copy-");
    const original = join(dir, "original.db");
    const back = join(dir, "back.db");
    expect(run("seed", "--db", original, "--records", "3000").code).toBe(0);

    const there = run("copy", "--from", original, "--to", url);
    expect(there.code).toBe(0);
    expect(JSON.parse(there.out)).toMatchObject({ from: original, to: url, read: 3000, duplicates: 0, verified: { ok: true, records: 3000, mismatches: 0 } });
    const copied = (JSON.parse(there.out) as { copied: number }).copied;
    expect(copied).toBe(3000);

    const home = run("copy", "--from", url, "--to", back);
    expect(JSON.parse(home.out)).toMatchObject({ read: 3000, copied: 3000, duplicates: 0, verified: { ok: true, records: 3000 } });

    // Every field of every execution, in the same order.
    const exported = (db: string) => run("export", "--db", db, "--format", "ndjson").out;
    const before = exported(original);
    expect(before.trim().split("\n")).toHaveLength(3000);
    expect(exported(back)).toBe(before);
    expect(exported(url)).toBe(before);

    // Again: everything is there already; nothing is doubled.
    const again = run("copy", "--from", original, "--to", url);
    expect(JSON.parse(again.out)).toMatchObject({ read: 3000, copied: 0, duplicates: 3000, verified: { ok: true, records: 3000 } });
  });

  test("mistakes: one line with the cause", () => {
    expect(run("copy", "--from", "/nowhere/x.db", "--to", url).err.trim()).toBe("installstats: no database at /nowhere/x.db; name the right one with --from");
    expect(run("copy", "--to", url).err.trim()).toBe("installstats: copy takes --from <db> and --to <db>: installstats copy --from installstats.db --to postgres://user@host/db");
    expect(run("copy", "--from", url, "--to", url).err.trim()).toBe(`installstats: --from and --to are the same database (${url})`);
  });
});
