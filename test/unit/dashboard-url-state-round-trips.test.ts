// The dashboard's URL state: parse and serialize are inverse, defaults stay out of the URL,
// malformed parameters fall back instead of failing, and derived states reset what they must.
import { describe, expect, test } from "bun:test";
import {
  clockUtc,
  dateTime,
  duration,
  instantUtc,
  label,
  percent,
  tickLabels,
  timeOfDay,
} from "../../src/web/dashboard/format.ts";
import { retryNumbers } from "../../src/web/dashboard/retries.ts";
import {
  apiParams,
  groupFilters,
  intervalFor,
  parseState,
  rangeDays,
  stateUrl,
  unitLabel,
  withChanges,
} from "../../src/web/dashboard/state.ts";

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
      "/?kind=tool&repo_source=external",
      "/failures?repo_source=none&exit_code=100&error_category=dependency",
      "/installs?kind=all&repo_source=ProxmoxVED&platform=incus&arch=arm64&cpu_vendor=amd&gpu_vendor=nvidia&gpu_passthrough=yes&repo_slug=alice%2FProxmoxVE&id=xyz",
      "/admin",
      "/admin?reason=invalid_json&cursor=1234",
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
    expect(stateUrl({ ...at("/admin?reason=repaired&cursor=9"), view: "overview" })).toBe("/");
    // Another reason of the rejected log is another list: from its newest entry.
    expect(withChanges(at("/admin?reason=repaired&cursor=9"), { reason: "invalid_json" })).toMatchObject({
      cursor: null,
      reason: "invalid_json",
    });
  });

  test("a new question starts at the first page with nothing open", async () => {
    const s = at("/installs?cursor=abc&id=xyz&type=lxc");
    expect(withChanges(s, { filters: { type: "vm" } })).toMatchObject({ cursor: null, id: null });
    expect(withChanges(s, { range: { days: 7 } })).toMatchObject({ cursor: null, id: null });
    expect(withChanges(s, { id: "other" })).toMatchObject({ cursor: "abc", id: "other" });
    expect(withChanges(s, { cursor: "next" })).toMatchObject({ cursor: "next", id: "xyz" });
  });

  test("API parameters, intervals and group filters", async () => {
    expect(apiParams(at("/?from=2026-01-01&to=2026-01-02&os_type=debian"), { by: "nsapp" }).toString()).toBe(
      "from=2026-01-01&to=2026-01-02&os_type=debian&by=nsapp",
    );
    expect(rangeDays({ from: "2026-01-01", to: "2026-01-01" })).toBe(1);
    expect([1, 2, 3, 120, 121].map((days) => intervalFor({ days }))).toEqual(["hour", "hour", "day", "day", "week"]);
    expect(groupFilters("os", "ubuntu 24.04")).toEqual({ os_type: "ubuntu", os_version: "24.04" });
    expect(groupFilters("os", "alpine")).toEqual({ os_type: "alpine" });
    expect(groupFilters("nsapp", "docker")).toEqual({ nsapp: "docker" });
    expect(groupFilters("nsapp", null)).toBeNull();
    expect(groupFilters("core_count", "4")).toBeNull();
  });
});

describe("kind and repository scope", () => {
  test("the default kind stays out of the URL, unknown kinds and malformed exit codes are no filter", async () => {
    expect(stateUrl(at("/?kind=install"))).toBe("/");
    expect(at("/?kind=everything").filters).toEqual({});
    expect(at("/?exit_code=abc").filters).toEqual({});
    expect(at("/?exit_code=256").filters).toEqual({});
    expect(unitLabel(at("/").filters)).toBe("Installs");
    expect(unitLabel(at("/?kind=tool").filters)).toBe("Tool runs");
    expect(unitLabel(at("/?kind=all").filters)).toBe("Runs");
  });

  test("scope and new filters reach the API as its parameters; repo none is its empty value", async () => {
    expect(apiParams(at("/?kind=addon&repo_source=external&exit_code=22")).toString()).toBe(
      "days=30&kind=addon&repo_source=external&exit_code=22",
    );
    expect(apiParams(at("/?repo_source=none")).get("repo_source")).toBe("");
    // Changing the scope is a new question: first page, nothing open.
    expect(withChanges(at("/installs?cursor=abc&id=xyz"), { filters: { repo_source: "external" } })).toMatchObject({
      cursor: null,
      id: null,
    });
  });

  test("groups of the new breakdowns select their runs", async () => {
    expect(groupFilters("exit_code", "100")).toEqual({ exit_code: "100" });
    expect(groupFilters("error_category", "network")).toEqual({ error_category: "network" });
    expect(groupFilters("gpu_passthrough", "yes")).toEqual({ gpu_passthrough: "yes" });
    expect(groupFilters("repo_source", "ProxmoxVED")).toEqual({ repo_source: "ProxmoxVED" });
    expect(groupFilters("repo_source", null)).toEqual({ repo_source: "none" });
    expect(groupFilters("platform", null)).toBeNull();
    // No filter parameter selects these.
    expect(groupFilters("attempt", "2")).toBeNull();
    expect(groupFilters("host_gpu", "igpu")).toBeNull();
    expect(groupFilters("failed_command", "npm ci")).toBeNull();
  });

  test("retries from a breakdown by attempt", async () => {
    const g = (value: string | null, total: number, success: number) => ({ value, total, success });
    expect(retryNumbers([g("1", 100, 80), g("2", 10, 6), g("3", 3, 1), g("4+", 1, 1)])).toEqual({
      installs: 100,
      executions: 114,
      retries: 14,
      perInstall: 1.14,
      retryRate: 0.1,
      rescued: 8,
      rescueRate: 0.8,
    });
    expect(retryNumbers([])).toEqual({
      installs: 0,
      executions: 0,
      retries: 0,
      perInstall: null,
      retryRate: null,
      rescued: 0,
      rescueRate: null,
    });
    expect(retryNumbers([g("1", 5, 5)])).toMatchObject({ retries: 0, retryRate: 0, rescueRate: null });
  });
});

describe("dashboard formatting", () => {
  test("durations in their two largest units, rates to one decimal, missing values marked", async () => {
    expect([null, 0, 0.04, 0.4, 3, 9.96, 42.4, 185, 7800, 277_200].map(duration)).toEqual([
      "–",
      "0s",
      "0s",
      "0.4s",
      "3s",
      "10s",
      "42s",
      "3m 5s",
      "2h 10m",
      "3d 5h",
    ]);
    expect([null, 0, 0.9191, 1].map((r) => percent(r))).toEqual(["–", "0.0%", "91.9%", "100.0%"]);
    expect([null, "", "docker"].map(label)).toEqual(["(none)", "(none)", "docker"]);
    expect(dateTime("2026-11-21T09:05:59.123Z")).toBe("2026-11-21 09:05");
    expect(timeOfDay("2026-11-21T09:05:59.123Z")).toBe("09:05:59");
  });

  test("times are UTC in 24-hour form, said so: the header, the log and the details agree with the API", async () => {
    // 13:05 UTC is "13:05:09 UTC" in every browser, whatever its zone or locale (not "1:05:09 PM").
    expect(clockUtc(new Date("2026-11-21T13:05:09.500Z"))).toBe("13:05:09 UTC");
    expect(clockUtc(new Date("2026-11-21T00:00:00Z"))).toBe("00:00:00 UTC");
    expect(instantUtc("2026-11-21T23:59:59.999Z")).toBe("2026-11-21 23:59:59 UTC");
  });

  test("axis labels show their step exactly: 2.5% steps are 0%, 2.5%, 5%, 7.5%, not 0%, 3%, 5%, 8%", async () => {
    expect(tickLabels([0, 0.025, 0.05, 0.075, 0.1], 0.025, "percent")).toEqual([
      "0.0%",
      "2.5%",
      "5.0%",
      "7.5%",
      "10.0%",
    ]);
    expect(tickLabels([0, 0.05, 0.1], 0.05, "percent")).toEqual(["0%", "5%", "10%"]);
    expect(tickLabels([0, 0.2, 0.4], 0.2, "percent")).toEqual(["0%", "20%", "40%"]);
    expect(tickLabels([0, 0.005, 0.01], 0.005, "percent")).toEqual(["0.0%", "0.5%", "1.0%"]);
    expect(tickLabels([0, 0.0025, 0.005], 0.0025, "percent")).toEqual(["0.00%", "0.25%", "0.50%"]);
    // Floating-point steps (0.1 + 0.2) are read as the step they mean.
    expect(tickLabels([0, 0.1, 0.2, 0.30000000000000004], 0.1, "percent")).toEqual(["0%", "10%", "20%", "30%"]);
    // Labels of one axis are always distinct.
    for (const step of [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25]) {
      const values = [0, 1, 2, 3, 4].map((i) => i * step);
      expect(new Set(tickLabels(values, step, "percent")).size, String(step)).toBe(5);
    }
    expect(tickLabels([0, 500, 1000, 1500], 500, "count")).toEqual(["0", "500", "1,000", "1,500"]);
    expect(tickLabels([0, 1, 2], 1, "count")).toEqual(["0", "1", "2"]);
  });
});
