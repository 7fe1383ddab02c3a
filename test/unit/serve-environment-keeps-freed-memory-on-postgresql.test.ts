// The allocator's setting serve runs under: a PostgreSQL node keeps freed memory, unless the
// operator chose otherwise; the SQLite server gives it back (src/cli/allocator.ts).
import { describe, expect, test } from "bun:test";
import { PURGE_DELAY, serveEnvironment } from "../../src/cli/allocator.ts";

describe("the environment serve runs under", () => {
  test("a PostgreSQL node: the present environment and the purge delay off", () => {
    const env = { PATH: "/usr/bin", INSTALLSTATS_DB: "postgres://db/x", UNSET: undefined };
    expect(serveEnvironment("postgres", env)).toEqual({
      PATH: "/usr/bin",
      INSTALLSTATS_DB: "postgres://db/x",
      [PURGE_DELAY]: "-1",
    });
  });

  test("the operator's value, whatever it is, is kept: no second start", () => {
    for (const value of ["10", "0", "-1", ""])
      expect(serveEnvironment("postgres", { [PURGE_DELAY]: value })).toBeNull();
  });

  test("the SQLite server runs as started", () => {
    expect(serveEnvironment("sqlite", { PATH: "/usr/bin" })).toBeNull();
  });
});
