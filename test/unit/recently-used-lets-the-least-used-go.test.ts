import { describe, expect, test } from "bun:test";
import { RecentlyUsed } from "../../src/domain/recently-used.ts";

describe("a bounded map of what was read (RecentlyUsed)", () => {
  test("past its limit the least recently used entry goes; a get or a set makes an entry the most recently used", () => {
    const kept = new RecentlyUsed<number>(3);
    kept.set("a", 1);
    kept.set("b", 2);
    kept.set("c", 3);
    expect(kept.get("a")).toBe(1); // a is now the most recently used: b goes first
    kept.set("d", 4);
    expect(kept.get("b")).toBeUndefined();
    expect([...kept.values()]).toEqual([3, 1, 4]);
    kept.set("c", 30); // set again: replaced, and the most recently used
    kept.set("e", 5);
    expect(kept.get("a")).toBeUndefined();
    expect([...kept.values()]).toEqual([4, 30, 5]);
  });

  test("delete and clear", () => {
    const kept = new RecentlyUsed<string>(2);
    kept.set("x", "1");
    kept.set("y", "2");
    kept.delete("x");
    kept.set("z", "3"); // room made by the delete: y stays
    expect([...kept.values()]).toEqual(["2", "3"]);
    kept.clear();
    expect([...kept.values()]).toEqual([]);
    expect(kept.get("y")).toBeUndefined();
  });
});
