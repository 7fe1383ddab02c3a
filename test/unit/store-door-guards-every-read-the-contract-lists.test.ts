// The one guard at both engines' doors (src/store/common/door.ts) and the days a rollup rebuild
// recounts (src/store/common/rebuild.ts): what each engine's store relies on, shown on plain
// objects, without a database.
import { describe, expect, test } from "bun:test";
import { DAY, HOUR } from "../../src/domain/time.ts";
import { READS } from "../../src/store/contract/store.ts";
import { guardReads } from "../../src/store/common/door.ts";
import { rebuildDays } from "../../src/store/common/rebuild.ts";

class Damage extends Error {}
/** A door that says every failure as a Damage, and counts what it bounded. */
function door() {
  const seen = { translated: 0, bounded: 0 };
  return {
    seen,
    translate: (e: unknown) => {
      seen.translated++;
      return new Damage(`translated: ${(e as Error).message}`);
    },
    bound: <T>(p: Promise<T>) => {
      seen.bounded++;
      return p;
    },
  };
}

interface Reads {
  count(n: number): Promise<number>;
  rows(n: number): AsyncGenerator<number[], void>;
}
const SHAPES = { count: "once", rows: "stream" } as const;

describe("guardReads", () => {
  test("a synchronous read answers as a promise; what it throws is translated, synchronously or not", async () => {
    const d = door();
    const reads = guardReads<Reads>(
      {
        count: (n) => {
          if (n < 0) throw new Error("bad page");
          return n * 2;
        },
        rows: function* () {},
      },
      SHAPES,
      d,
    );
    const answer = reads.count(2);
    expect(answer).toBeInstanceOf(Promise);
    expect(await answer).toBe(4);
    expect(d.seen.bounded).toBe(0); // nothing to bound: it answered at once
    await expect(reads.count(-1)).rejects.toThrow("translated: bad page");
    expect(d.seen.translated).toBe(1);
  });

  test("an asynchronous read is bounded by the door, and its rejection translated", async () => {
    const d = door();
    const reads = guardReads<Reads>(
      { count: async (n) => (n < 0 ? Promise.reject(new Error("server gone")) : n + 1), rows: async function* () {} },
      SHAPES,
      d,
    );
    expect(await reads.count(1)).toBe(2);
    await expect(reads.count(-1)).rejects.toBeInstanceOf(Damage);
    expect(d.seen).toEqual({ bounded: 2, translated: 1 });
  });

  for (const kind of ["sync", "async"] as const) {
    test(`${kind === "sync" ? "a plain" : "an async"} stream is handed over item by item; a failure midway is translated`, async () => {
      const d = door();
      function* sync(n: number) {
        yield [1, 2];
        if (n > 1) throw new Error("page 2 damaged");
        yield [3];
      }
      async function* async_(n: number) {
        yield* sync(n);
      }
      const reads = guardReads<Reads>({ count: (n) => n, rows: kind === "sync" ? sync : async_ }, SHAPES, d);
      const got: number[][] = [];
      for await (const chunk of reads.rows(1)) got.push(chunk);
      expect(got).toEqual([[1, 2], [3]]);
      const partial: number[][] = [];
      const failed = (async () => {
        for await (const chunk of reads.rows(2)) partial.push(chunk);
      })();
      await expect(failed).rejects.toThrow("translated: page 2 damaged");
      expect(partial).toEqual([[1, 2]]);
    });

    test(`${kind === "sync" ? "a plain" : "an async"} stream the consumer leaves early is closed underneath`, async () => {
      let closed = 0;
      function* sync() {
        try {
          for (let i = 0; ; i++) yield [i];
        } finally {
          closed++;
        }
      }
      async function* async_() {
        yield* sync();
      }
      const reads = guardReads<Reads>({ count: (n) => n, rows: kind === "sync" ? sync : async_ }, SHAPES, door());
      for await (const chunk of reads.rows(0)) if (chunk[0] === 2) break;
      expect(closed).toBe(1);
      // A consumer that fails while holding a chunk closes it too.
      const failing = (async () => {
        for await (const _ of reads.rows(0)) throw new Error("consumer failed");
      })();
      await expect(failing).rejects.toThrow("consumer failed");
      expect(closed).toBe(2);
    });
  }

  test("only the reads of the table are guarded: the contract's table names every read once", () => {
    const d = door();
    const inner = { count: (n: number) => n, rows: () => [] };
    const reads = guardReads<Pick<Reads, "count">>(inner, { count: "once" }, d);
    expect(Object.keys(reads)).toEqual(["count"]);
    const names = Object.keys(READS);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain("issueLinks");
    expect(names).toContain("relayStatus");
    expect(
      Object.entries(READS)
        .filter(([, shape]) => shape === "stream")
        .map(([name]) => name)
        .sort(),
    ).toEqual(["executionChunks", "heldChunks", "iterateExecutions", "rejectedChunks"]);
  });
});

describe("rebuildDays", () => {
  const day0 = Date.UTC(2026, 5, 1);
  test("every day from the oldest record's to the newest's, each told before it is recounted", () => {
    const told: [number, number][] = [];
    const days: number[] = [];
    for (const day of rebuildDays({ first: day0 + 5 * HOUR, last: day0 + 2 * DAY + 1 }, (d, end) =>
      told.push([d, end]),
    )) {
      expect(told.at(-1)?.[0]).toBe(day); // told before the engine recounts it
      days.push(day);
    }
    expect(days).toEqual([day0, day0 + DAY, day0 + 2 * DAY]);
    expect(told.map(([, end]) => end)).toEqual([day0 + 3 * DAY, day0 + 3 * DAY, day0 + 3 * DAY]);
  });

  test("an engine's bound ends it sooner (SQLite: the open hours are counted in memory)", () => {
    expect([...rebuildDays({ first: day0, last: day0 + 5 * DAY }, undefined, day0 + 2 * DAY)]).toEqual([
      day0,
      day0 + DAY,
    ]);
    expect([...rebuildDays({ first: day0 + DAY, last: day0 + 5 * DAY }, undefined, day0)]).toEqual([]);
  });
});
