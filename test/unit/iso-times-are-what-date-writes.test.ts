// isoTimes (domain/time.ts) writes the hourly points' times without a Date each: the strings must be
// exactly what Date#toISOString writes, across days, months, years and a leap day, and for times
// that are not whole hours.
import { expect, test } from "bun:test";
import { HOUR, isoTimes } from "../../src/domain/time.ts";

test("whole hours over a year's end and a leap day, and other times, read as Date#toISOString writes them", () => {
  const ts: number[] = [];
  for (let t = Date.UTC(2027, 11, 30, 21); t < Date.UTC(2028, 2, 2); t += HOUR) ts.push(t);
  ts.push(Date.UTC(2028, 1, 29, 23, 59, 59, 999), 0, Date.UTC(2026, 10, 28, 5), 1_700_000_000_123);
  expect(isoTimes(ts)).toEqual(ts.map((t) => new Date(t).toISOString()));
  expect(isoTimes([Date.UTC(2028, 1, 29, 7)])).toEqual(["2028-02-29T07:00:00.000Z"]);
});
