// The public stats' privacy floor (issue 18 item 4, src/read/native/public-stats-routes.ts applyFloor): apps
// under the floor are summed into "other", runs without an app are never listed.
import { describe, expect, test } from "bun:test";
import { applyFloor } from "../../src/read/native/public-stats-routes.ts";

const group = (value: string | null, total: number, success: number, failed: number, aborted = 0, blocked = 0) => ({
  value,
  total,
  success,
  failed,
  blocked,
  aborted,
});

describe("applyFloor", () => {
  test("apps at or above the floor are listed, most installed first then by name; the rest are summed into other", () => {
    const r = applyFloor(
      [
        group("b", 10, 8, 2),
        group("a", 10, 10, 0),
        group("big", 50, 40, 5, 3, 2),
        group("small", 9, 0, 9),
        group("tiny", 1, 1, 0),
      ],
      10,
    );
    expect(r.apps.map((a) => a.app)).toEqual(["big", "a", "b"]);
    expect(r.apps[0]).toEqual({
      app: "big",
      installs: 50,
      success: 40,
      failed: 5,
      blocked: 2,
      aborted: 3,
      failure_rate: 0.1111,
    });
    expect(r.other).toEqual({
      apps: 2,
      installs: 10,
      success: 1,
      failed: 9,
      blocked: 0,
      aborted: 0,
      failure_rate: 0.9,
    });
    expect(r.total).toEqual({ installs: 80, success: 59, failed: 16, blocked: 2, aborted: 3, failure_rate: 0.2133 });
  });

  test("runs without an app name are never listed, and are not counted as an app of other", () => {
    const r = applyFloor([group(null, 100, 100, 0), group("x", 3, 3, 0)], 2);
    expect(r.apps.map((a) => a.app)).toEqual(["x"]);
    expect(r.other).toMatchObject({ apps: 0, installs: 100 });
  });

  test("no finished run: failure rate null; nothing at all: zeros", () => {
    expect(applyFloor([group("a", 5, 0, 0, 0)], 1).apps[0]!.failure_rate).toBeNull();
    expect(applyFloor([], 10)).toEqual({
      total: { installs: 0, success: 0, failed: 0, blocked: 0, aborted: 0, failure_rate: null },
      apps: [],
      other: { apps: 0, installs: 0, success: 0, failed: 0, blocked: 0, aborted: 0, failure_rate: null },
    });
  });
});
