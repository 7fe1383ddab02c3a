// A PostgreSQL node runs itself again, in the same process, with mimalloc's purge delay off
// (src/cli/allocator.ts); an operator's own value stays; the SQLite server is started as it was.
// The compiled binary against a throwaway server on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary, startServer } from "../helpers/binary.ts";
import { createDatabase, startPostgres, type PgServer } from "../helpers/postgres.ts";
import { tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(60_000);

let pg: PgServer;
let bin: string;
beforeAll(async () => {
  [pg, bin] = await Promise.all([startPostgres(), compiledBinary()]);
});
afterAll(() => pg?.stop());

/** The variables of a running process, as the kernel has them. */
const environOf = (pid: number): Map<string, string> =>
  new Map(
    readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)] as [string, string]),
  );

/** Starts serve, returns the purge delay the process that answers runs under (undefined: none), and stops it. */
async function purgeDelayOf(args: string[], env: Record<string, string> = {}): Promise<string | undefined> {
  const server = await startServer(bin, args, env);
  try {
    // The process that listens is the one that was started: replaced, not a child.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    return environOf(server.proc.pid).get("MIMALLOC_PURGE_DELAY");
  } finally {
    expect(await server.stop()).toBe(0);
  }
}

describe("the allocator's setting of a server", () => {
  test("a PostgreSQL node keeps freed memory", async () => {
    expect(await purgeDelayOf(["--db", await createDatabase(pg, "keep1")])).toBe("-1");
  });

  test("the same through INSTALLSTATS_DB", async () => {
    expect(await purgeDelayOf([], { INSTALLSTATS_DB: await createDatabase(pg, "keep2") })).toBe("-1");
  });

  test("an operator's value stays", async () => {
    expect(await purgeDelayOf(["--db", await createDatabase(pg, "keep3")], { MIMALLOC_PURGE_DELAY: "10" })).toBe("10");
  });

  test("the SQLite server gives memory back as Bun's default does", async () => {
    expect(await purgeDelayOf(["--db", join(tempDir("keep-sqlite-"), "s.db")])).toBeUndefined();
  });
});
