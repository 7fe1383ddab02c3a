// The label dictionary an engine keeps in memory (src/store/common/labels.ts): every label met by
// default; with a bound, the labels met lately in two generations and the rest looked up again
// where they are stored, so a bulk writer's memory does not grow with its distinct failures.
import { describe, expect, test } from "bun:test";
import { LabelCache, type LabelSource } from "../../src/store/common/labels.ts";

/** A table of labels as the engine's would be, counting what is asked of it. */
function table(n: number) {
  const rows = Array.from({ length: n }, (_, i) => ({ id: i + 1, label: `failure-${i + 1}` }));
  const asked = { byLabel: 0, byId: 0 };
  const source: LabelSource = {
    idOf: (label) => (asked.byLabel++, rows.find((r) => r.label === label)?.id),
    textOf: (id) => (asked.byId++, rows.find((r) => r.id === id)?.label),
  };
  return { rows, asked, source };
}

describe("label dictionary", () => {
  test("unbounded, every label learned is held: nothing is looked up", () => {
    const cache = new LabelCache();
    const { rows } = table(5_000);
    cache.learn(rows);
    expect(cache.id("failure-1")).toBe(1);
    expect(cache.text(1)).toBe("failure-1");
    expect(cache.text(5_000)).toBe("failure-5000");
    expect(cache.newest).toBe(5_000);
  });

  test("bounded, at most two generations are held; an older label is looked up again, then held", () => {
    const { rows, asked, source } = table(1_000);
    const cache = new LabelCache(null, { limit: 100, source });
    cache.learn(rows);
    // The newest labels are held: answered without the table.
    expect(cache.id("failure-1000")).toBe(1000);
    expect(cache.text(950)).toBe("failure-950");
    expect(asked).toEqual({ byLabel: 0, byId: 0 });
    // The first ones went with their generations.
    expect(cache.id("failure-1")).toBe(1);
    expect(asked.byLabel).toBe(1);
    expect(cache.text(2)).toBe("failure-2");
    expect(asked.byId).toBe(1);
    // Met again, they are held now.
    expect(cache.id("failure-1")).toBe(1);
    expect(cache.text(2)).toBe("failure-2");
    expect(cache.has("failure-2")).toBe(true);
    expect(asked).toEqual({ byLabel: 1, byId: 1 });
    // Not more than two generations' worth: of 1,000 labels, 800 are asked of the table again.
    const before = asked.byLabel + asked.byId;
    const fresh = new LabelCache(null, { limit: 100, source });
    fresh.learn(rows);
    for (let id = 1; id <= 800; id++) fresh.text(id);
    expect(asked.byLabel + asked.byId - before).toBe(800);
  });

  test("bounded: a label is made once, pending until its transaction commits, forgotten when it rolls back", () => {
    const { source } = table(3);
    let next = 4;
    const made: string[] = [];
    const cache = new LabelCache(
      (label) => {
        made.push(label);
        return next++;
      },
      { limit: 2, source },
    );
    // Stored already: found in the table, not made again.
    expect(cache.id("failure-2")).toBe(2);
    expect(cache.id("new-a")).toBe(4);
    expect(cache.id("new-a")).toBe(4);
    expect(cache.text(4)).toBe("new-a");
    cache.rollback();
    expect(cache.id("new-b")).toBe(5);
    cache.commit();
    expect(cache.text(5)).toBe("new-b");
    expect(made).toEqual(["new-a", "new-b"]);
  });

  test("bounded: a label nobody stored is unknown, not invented", () => {
    const { source } = table(3);
    const cache = new LabelCache(null, { limit: 2, source });
    expect(cache.has("never-seen")).toBe(false);
    expect(cache.text(99)).toBeUndefined();
    expect(() => cache.id("never-seen")).toThrow(/was not made/);
  });
});
