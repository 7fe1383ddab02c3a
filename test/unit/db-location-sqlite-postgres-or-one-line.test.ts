// What a --db text names, decided in one place (src/store/location.ts): a postgres:// or
// postgresql:// URL is PostgreSQL, any other scheme:// is refused with one line naming what is
// accepted, everything else (":memory:" and names with a colon but no "//" included) is an SQLite file.
import { describe, expect, test } from "bun:test";
import { DatabaseOpenError } from "../../src/store/engine.ts";
import { UnsupportedLocationError, locate, parseLocation } from "../../src/store/location.ts";
import { openEngine } from "../../src/store/open.ts";

describe("parseLocation", () => {
  test.each([
    ["installstats.db", "installstats.db"],
    ["/var/lib/installstats/installstats.db", "/var/lib/installstats/installstats.db"],
    ["./data/x.db", "./data/x.db"],
    [":memory:", ":memory:"],
    // SQLite files as they were always opened: the text is the file's name, colon and all.
    ["file:x.db", "file:x.db"],
    ["mysql:host", "mysql:host"],
    ["data/a://b.db", "data/a://b.db"],
  ])("%s is an SQLite file", (text, path) => {
    expect(parseLocation(text)).toEqual({ engine: "sqlite", path });
  });

  test.each([
    "postgres://installstats@db-host/installstats",
    "postgresql://u:secret@127.0.0.1:5432/db?sslmode=require",
    "POSTGRES://h/db",
    "PostgreSQL://h/db",
  ])("%s is a PostgreSQL URL", (text) => {
    expect(parseLocation(text)).toEqual({ engine: "postgres", url: text });
  });

  test.each([
    ["mysql://host/db", "mysql://host/db", "mysql://"],
    ["MySQL://host/db", "MySQL://host/db", "mysql://"],
    ["sqlite://x.db", "sqlite://x.db", "sqlite://"],
    ["file:///tmp/x.db", "file:///tmp/x.db", "file://"],
    ["postgres+ssl://h/db", "postgres+ssl://h/db", "postgres+ssl://"],
    ["mariadb://root:hunter2@host/db", "mariadb://root:***@host/db", "mariadb://"],
  ])("%s is refused in one line naming the accepted forms", (text, shown, scheme) => {
    const where = parseLocation(text);
    expect(where.engine).toBeNull();
    if (where.engine !== null) return;
    expect(where.error).toStartWith(`${shown} is not a database installstats can open (${scheme} is not supported)`);
    for (const accepted of ["SQLite file", ":memory:", "postgres://", "postgresql://"])
      expect(where.error).toContain(accepted);
    expect(where.error).not.toContain("hunter2");
    expect(where.error).not.toContain("\n");
  });
});

describe("locate", () => {
  test("returns what parseLocation parsed", () => {
    expect(locate("x.db")).toEqual({ engine: "sqlite", path: "x.db" });
    expect(locate("postgres://h/db")).toEqual({ engine: "postgres", url: "postgres://h/db" });
  });

  test("throws an UnsupportedLocationError with parseLocation's line for another scheme", () => {
    const where = parseLocation("mysql://host/db");
    expect(() => locate("mysql://host/db")).toThrow(UnsupportedLocationError);
    expect(() => locate("mysql://host/db")).toThrow(where.engine === null ? where.error : "unreachable");
  });
});

describe("openEngine parses --read-db too, before connecting to anything", () => {
  const primary = "postgres://installstats@127.0.0.1:1/installstats";
  const open = (replica: string) =>
    openEngine(primary, {
      durability: "normal",
      migrate: true,
      create: true,
      readReplica: { url: replica, maxLagMs: 1000 },
    });

  test("another scheme: the one line naming the accepted forms", async () => {
    const e = await open("mysql://replica/db").catch((err: unknown) => err);
    expect(e).toBeInstanceOf(UnsupportedLocationError);
    expect((e as Error).message).toStartWith(
      "mysql://replica/db is not a database installstats can open (mysql:// is not supported): name an SQLite file",
    );
  });

  test("an SQLite file: a replica is a PostgreSQL server's", async () => {
    const e = await open("replica.db").catch((err: unknown) => err);
    expect(e).toBeInstanceOf(DatabaseOpenError);
    expect((e as Error).message).toBe(
      "--read-db replica.db is not a postgres:// URL; give it the replica's URL, or leave --read-db unset",
    );
  });
});
