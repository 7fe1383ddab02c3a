// SQLite's check of a damaged file always names what is hurt, also when a row it cannot read
// stops the whole check (PRAGMA quick_check then raises SQLITE_CORRUPT instead of answering).
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkFile } from "../../src/store/sqlite/integrity.ts";

const dir = mkdtempSync(join(tmpdir(), "installstats-integrity-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file with one table of fixed rows (same bytes every run); `fill` overwrites a leaf page's cell pointers. */
function damaged(name: string, fill: number): string {
  const path = join(dir, name);
  const db = new Database(path);
  db.run("CREATE TABLE hurt (id INTEGER PRIMARY KEY, text TEXT NOT NULL, n INTEGER NOT NULL)");
  db.run("CREATE TABLE whole (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
  db.transaction(() => {
    for (let i = 0; i < 500; i++) db.run("INSERT INTO hurt (text, n) VALUES (?, ?)", ["y".repeat(300), i * 1000003]);
    db.run("INSERT INTO whole (v) VALUES ('fine')");
  })();
  const leaves = db
    .query<{ pageno: number }, []>(
      "SELECT pageno FROM dbstat WHERE name = 'hurt' AND pagetype = 'leaf' ORDER BY pageno",
    )
    .all();
  db.close();
  const page = leaves[Math.floor(leaves.length / 3)]!.pageno;
  const fd = openSync(path, "r+");
  writeSync(fd, Buffer.alloc(64, fill), 0, 64, (page - 1) * 4096 + 8);
  closeSync(fd);
  return path;
}

function wholeCheckThrows(path: string): boolean {
  const db = new Database(path, { readonly: true });
  try {
    db.query("PRAGMA quick_check").all();
    return false;
  } catch {
    return true;
  } finally {
    db.close();
  }
}

/** The first of `fills` whose damage stops SQLite's whole check (`stops`) or lets it answer. */
function firstDamage(name: string, fills: readonly number[], stops: boolean): string {
  for (const fill of fills) {
    const path = damaged(`${name}-${fill}.db`, fill);
    if (wholeCheckThrows(path) === stops) return path;
  }
  throw new Error(stops ? "no fill stops SQLite's check" : "no fill lets SQLite's check answer");
}

describe("checkFile", () => {
  test("a sound file is ok", () => {
    const db = new Database(":memory:");
    db.run("CREATE TABLE t (a TEXT NOT NULL)");
    expect(checkFile(db, "quick")).toEqual(["ok"]);
    expect(checkFile(db, "full")).toEqual(["ok"]);
  });

  test("cell pointers out of range: SQLite's lines, the tree named", () => {
    const path = firstDamage("pointers", [0xa5, 0xa4, 0xa6, 0x5a], false);
    const db = new Database(path, { readonly: true });
    const found = checkFile(db, "quick");
    db.close();
    expect(found[0]).toMatch(/^hurt: page \d+ cell \d+: Offset \d+ out of range/);
  });

  test("a check that stops on an unreadable row: each table checked on its own, the damaged one named", () => {
    // Whether the check stops depends on the bytes the damaged pointers land on: on these rows
    // fills of 0x8f to 0xef in steps of 0x10 do (Bun 1.4.5's SQLite). Another SQLite may differ,
    // so the first fill that stops it is taken, 0xcf first.
    const path = firstDamage("stops", [0xcf, ...Array.from({ length: 256 }, (_, i) => i)], true);
    const db = new Database(path, { readonly: true });
    for (const kind of ["quick", "full"] as const) {
      const found = checkFile(db, kind);
      expect(found).toEqual(["hurt: database disk image is malformed (SQLite's check stopped in this table)"]);
    }
    db.close();
  });
});
