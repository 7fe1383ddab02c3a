// The dashboard's URL state: parse and serialize are inverse, defaults stay out of the URL,
// malformed parameters fall back instead of failing, and derived states reset what they must.
import { describe, expect, test } from "bun:test";
import { dateTime, duration, label, percent } from "../src/web/dashboard/format.ts";
import { apiParams, groupFilters, intervalFor, parseState, rangeDays, stateUrl, withChanges } from "../src/web/dashboard/state.ts";

const at = (path: string) => parseState(new URL(path, "http://127.0.0.1:8080"));

describe("dashboard URL state", () => {
  test("round-trips every view with its parameters", async () => {
    for (const url of [
      "/",
      "/?days=7",
      "/failures?days=90&type=vm&min_runs=3",
      "/installs?from=2026-01-01&to=2026-01-31&nsapp=docker&outcome=failed&q=exit+code&order=oldest&cursor=abc&id=xyz",
      "/installs?signature=0123456789abcdef",
      "/app?days=365&nsapp=home+assistant",
    ]) {
      expect(stateUrl(at(url))).toBe(url);
    }
  });

  test("defaults are left out, unknown paths show the overview, bad values fall back", async () => {
    expect(stateUrl(at("/?days=30"))).toBe("/");
    expect(at("/nowhere").view).toBe("overview");
    expect(at("/?days=-3").range).toEqual({ days: 30 });
    expect(at("/?days=abc").range).toEqual({ days: 30 });
    expect(at("/?from=2026-02-01&to=2026-01-01").range).toEqual({ days: 30 });
    expect(at("/?from=yesterday&to=2026-01-01").range).toEqual({ days: 30 });
    expect(at("/failures?min_runs=-1").minRuns).toBe(10);
    expect(at("/?nsapp=%20%20").filters).toEqual({});
    // View-specific parameters do not leak into other views' URLs.
    expect(stateUrl({ ...at("/installs?cursor=abc&id=x&order=oldest"), view: "overview" })).toBe("/");
  });

  test("a new question starts at the first page with nothing open", async () => {
    const s = at("/installs?cursor=abc&id=xyz&type=lxc");
    expect(withChanges(s, { filters: { type: "vm" } })).toMatchObject({ cursor: null, id: null });
    expect(withChanges(s, { range: { days: 7 } })).toMatchObject({ cursor: null, id: null });
    expect(withChanges(s, { id: "other" })).toMatchObject({ cursor: "abc", id: "other" });
    expect(withChanges(s, { cursor: "next" })).toMatchObject({ cursor: "next", id: "xyz" });
  });

  test("API parameters, intervals and group filters", async () => {
    expect(apiParams(at("/?from=2026-01-01&to=2026-01-02&os_type=debian"), { by: "nsapp" }).toString()).toBe("from=2026-01-01&to=2026-01-02&os_type=debian&by=nsapp");
    expect(rangeDays({ from: "2026-01-01", to: "2026-01-01" })).toBe(1);
    expect([1, 2, 3, 120, 121].map((days) => intervalFor({ days }))).toEqual(["hour", "hour", "day", "day", "week"]);
    expect(groupFilters("os", "ubuntu 24.04")).toEqual({ os_type: "ubuntu", os_version: "24.04" });
    expect(groupFilters("os", "alpine")).toEqual({ os_type: "alpine" });
    expect(groupFilters("nsapp", "docker")).toEqual({ nsapp: "docker" });
    expect(groupFilters("nsapp", null)).toBeNull();
    expect(groupFilters("core_count", "4")).toBeNull();
  });
});

describe("dashboard formatting", () => {
  test("durations in their two largest units, rates to one decimal, missing values marked", async () => {
    expect([null, 0, 42.4, 185, 7800, 277_200].map(duration)).toEqual(["–", "0s", "42s", "3m 5s", "2h 10m", "3d 5h"]);
    expect([null, 0, 0.9191, 1].map((r) => percent(r))).toEqual(["–", "0.0%", "91.9%", "100.0%"]);
    expect([null, "", "docker"].map(label)).toEqual(["(none)", "(none)", "docker"]);
    expect(dateTime("2026-11-21T09:05:59.123Z")).toBe("2026-11-21 09:05");
  });
});
