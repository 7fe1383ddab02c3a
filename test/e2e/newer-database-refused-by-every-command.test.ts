// Upgrades and downgrades: a database a newer release has migrated is refused by an older binary
// with the way back (docs/operations.md#upgrades-and-downgrades), before any command touches it; a
// database this binary knows opens, and one at an older schema is migrated.
import { Database } from "bun:sqlite";
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseOpenError } from "../../src/store/engine.ts";
import { migrationsFolder, openDatabase } from "../../src/store/sqlite/database.ts";
import { compiledBinary } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(120_000);

const journal = JSON.parse(readFileSync(join(migrationsFolder(), "meta", "_journal.json"), "utf8")) as {
  entries: { when: number; tag: string }[];
};
const newestKnown = Math.max(...journal.entries.map((e) => e.when));

let dir: string;
let bin: string;
beforeAll(async () => {
  dir = tempDir("installstats-downgrade-");
  bin = await compiledBinary();
});

/** A database at this binary's schema, then marked as migrated by a release one migration ahead. */
function fromNewerRelease(name: string, ahead = 86_400_000): string {
  const path = join(dir, name);
  openDatabase(path, { durability: "normal", migrate: true }).sqlite.close();
  const sqlite = new Database(path);
  sqlite.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-a-newer-release', ?)", [
    newestKnown + ahead,
  ]);
  sqlite.close();
  return path;
}

describe("a database written by a newer release", () => {
  test("is refused on open, naming both schemas and the way back; nothing is written", () => {
    const path = fromNewerRelease("newer.db");
    const before = readFileSync(path);
    let error: unknown;
    try {
      openDatabase(path, { durability: "normal", migrate: true });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DatabaseOpenError);
    const message = (error as Error).message;
    expect(message).toContain("upgraded by a newer installstats");
    expect(message).toContain(new Date(newestKnown).toISOString().slice(0, 10));
    expect(message).toContain(new Date(newestKnown + 86_400_000).toISOString().slice(0, 10));
    expect(message).toContain("restore a backup taken before the upgrade");
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  test("the compiled binary refuses it in every command with one line and exit 3", () => {
    const path = fromNewerRelease("newer-cli.db");
    for (const args of [["serve", "--port", "0"], ["verify"], ["migrate"], ["export"]]) {
      const r = Bun.spawnSync([bin, ...args, "--db", path], { stdin: "ignore", timeout: 30_000 });
      const err = r.stderr.toString().trimEnd().split("\n");
      expect({ args, code: r.exitCode }).toEqual({ args, code: 3 });
      expect(err).toHaveLength(1);
      expect(err[0]).toStartWith(`installstats: ${path} was upgraded by a newer installstats`);
    }
  });

  test("a database at this binary's schema opens again, nothing applied twice", () => {
    const path = join(dir, "current.db");
    openDatabase(path, { durability: "normal", migrate: true }).sqlite.close();
    const { sqlite } = openDatabase(path, { durability: "normal", migrate: true });
    const { n } = sqlite.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number };
    expect(n).toBe(journal.entries.length);
    sqlite.close();
  });
});
