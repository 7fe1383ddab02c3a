// The group-commit writer, against a real store.
import { describe, expect, test } from "bun:test";
import { createWriter } from "../../src/store/writer.ts";
import { openSqliteEngine } from "../../src/store/sqlite/engine.ts";
import { StorageUnavailableError, StorageUnreachableError } from "../../src/store/contract/errors.ts";
import type { WriteOp } from "../../src/store/contract/store.ts";
import { reportOp, uploadStart } from "../helpers/reports.ts";

const start = (id: string): WriteOp => reportOp(uploadStart(id), 1);

const realStore = () => openSqliteEngine(":memory:", { durability: "normal", migrate: true });

describe("group-commit writer", () => {
  test("writes submitted in one turn share one transaction, and resolve only after it", async () => {
    const { sqlite, store } = realStore();
    const seen: number[] = [];
    const writer = createWriter((ops) => (seen.push(ops.length), store.write(ops)), 1000);
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => writer.submit(start(`w${i}`))));
    expect(seen).toEqual([50]);
    expect(results.every((r) => r.kind === "created")).toBe(true);
    expect(sqlite.query("SELECT count(*) AS n FROM executions").get()).toEqual({ n: 50 });
  });

  test("maxBatch caps a transaction; the rest follows in the next", async () => {
    const { store } = realStore();
    const seen: number[] = [];
    const writer = createWriter((ops) => (seen.push(ops.length), store.write(ops)), 20);
    await Promise.all(Array.from({ length: 45 }, (_, i) => writer.submit(start(`m${i}`))));
    expect(seen).toEqual([20, 20, 5]);
  });

  test("one failing write does not fail its neighbours", async () => {
    const { store } = realStore();
    const poison = start("poison");
    const writer = createWriter(
      (ops) =>
        ops.includes(poison)
          ? (() => {
              throw new TypeError("bug");
            })()
          : store.write(ops),
      100,
    );
    const outcomes = await Promise.allSettled([
      writer.submit(start("a")),
      writer.submit(poison),
      writer.submit(start("b")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(writer.stats.failedBatches).toBe(1);
  });

  test("SQLite errors become StorageUnavailableError; drain waits for the queue", async () => {
    const { sqlite, store } = realStore();
    const writer = createWriter((ops) => store.write(ops), 100);
    sqlite.run("PRAGMA query_only = ON");
    const failed = writer.submit(start("x"));
    await writer.drain();
    await expect(failed).rejects.toBeInstanceOf(StorageUnavailableError);
    expect(writer.stats.lastError).toContain("readonly");
  });

  test("storage that cannot be reached fails the whole batch at once: no write is tried again on its own", async () => {
    let commits = 0;
    const writer = createWriter(() => {
      commits++;
      throw new StorageUnreachableError("no server takes writes");
    }, 100);
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, (_, i) => writer.submit(start(`u${i}`))));
    expect(outcomes.every((o) => o.status === "rejected" && o.reason instanceof StorageUnreachableError)).toBe(true);
    expect(commits).toBe(1);
  });
});
