// What a relayed report looks like upstream (domain/relay.ts): the body of each protocol as the
// real clients send it, built from the normalized report; the URL each endpoint goes to; which
// repositories a policy takes.
import { describe, expect, test } from "bun:test";
import { normalizeStart, normalizeTelemetry, normalizeUpdate } from "../../src/domain/normalize.ts";
import { endpointOf, relayBody, relayRepo, relayTargets, relayable, type RelayPolicy } from "../../src/domain/relay.ts";
import type { Report } from "../../src/domain/execution.ts";
import type { JsonObject } from "../../src/domain/json.ts";
import { backoffMs } from "../../src/relay/sender.ts";

const OPTS = { maxFieldLength: 128, maxErrorLength: 131072, maskIps: true };
const ok = (r: { ok: true; value: Report } | { ok: false }) => {
  if (!r.ok) throw new Error("not valid");
  return r.value;
};
const upload = (body: JsonObject) => ok(normalizeStart(body, OPTS));
const update = (body: JsonObject) => ok(normalizeUpdate(body, OPTS));
const telemetry = (body: JsonObject) => ok(normalizeTelemetry(body, OPTS));
const parsed = (report: Report, omit: string[] = []) => JSON.parse(relayBody(report, omit)) as Record<string, unknown>;

describe("relayBody", () => {
  test("/upload: the old start report, keys in the client's order, as stored (units stripped, lowercased)", () => {
    const r = upload({
      ct_type: 1,
      type: "LXC",
      disk_size: "32G",
      core_count: 2,
      ram_size: 2048,
      os_type: "Debian",
      os_version: "12",
      disableip6: "yes",
      nsapp: "jellyfin",
      method: "default",
      pve_version: "8.2.2",
      status: "installing",
      random_id: "u-1",
    });
    expect(endpointOf(r)).toBe("upload");
    expect(relayBody(r, [])).toBe(
      '{"ct_type":1,"type":"lxc","disk_size":32,"core_count":2,"ram_size":2048,"os_type":"debian","os_version":"12","disableip6":"yes","nsapp":"jellyfin","method":"default","pve_version":"8.2.2","status":"installing","random_id":"u-1"}',
    );
    // host_version (an alias) goes as pve_version; absent fields stay absent.
    expect(parsed(upload({ type: "vm", host_version: "not found", random_id: "u-2" }))).toEqual({
      type: "vm",
      pve_version: "not found",
      status: "installing",
      random_id: "u-2",
    });
  });

  test("/upload/updatestatus: status, error (masked as stored), random_id", () => {
    const r = update({ status: "FAILED", error: "wget http://192.168.1.20/x failed", random_id: "u-1" });
    expect(endpointOf(r)).toBe("updatestatus");
    expect(parsed(r)).toEqual({ status: "failed", error: r.error, random_id: "u-1" });
    expect(r.error).not.toContain("192.168.1.20");
    expect(parsed(r, ["error"])).toEqual({ status: "failed", random_id: "u-1" });
  });

  test("/telemetry v2: payload_version first, every field the report carried, unknown fields last", () => {
    const r = telemetry({
      payload_version: 2,
      random_id: "r",
      execution_id: "e",
      type: "lxc",
      nsapp: "docker",
      status: "failed",
      ct_type: 1,
      disk_size: 8,
      core_count: 2,
      ram_size: 2048,
      os_type: "debian",
      os_version: "12",
      pve_version: "8.4.1",
      method: "default",
      exit_code: 100,
      error: "exit_code=100 | apt at 10.0.0.1",
      error_category: "dependency",
      install_duration: 95,
      cpu_vendor: "intel",
      cpu_model: "Xeon",
      gpu_vendor: "intel",
      gpu_model: "",
      gpu_passthrough: "no",
      ram_speed: "4800",
      arch: "amd64",
      platform: "pve",
      has_arm: false,
      kernel_version: "6.8.12-4-pve",
      app_version: "27.0",
      failed_command: "apt-get install -y x",
      failed_line: 12,
      repo_source: "ProxmoxVE",
      repo_slug: "community-scripts/ProxmoxVE",
      future_field: { a: 1 },
    });
    expect(endpointOf(r)).toBe("telemetry");
    const body = parsed(r);
    expect(Object.keys(body)).toEqual([
      "payload_version",
      "random_id",
      "execution_id",
      "type",
      "nsapp",
      "status",
      "ct_type",
      "disk_size",
      "core_count",
      "ram_size",
      "os_type",
      "os_version",
      "pve_version",
      "method",
      "exit_code",
      "error",
      "error_category",
      "install_duration",
      "cpu_vendor",
      "cpu_model",
      "gpu_vendor",
      "gpu_model",
      "gpu_passthrough",
      "ram_speed",
      "arch",
      "platform",
      "has_arm",
      "kernel_version",
      "app_version",
      "failed_command",
      "failed_line",
      "repo_source",
      "repo_slug",
      "future_field",
    ]);
    expect(body).toMatchObject({
      payload_version: 2,
      gpu_passthrough: "no",
      has_arm: false,
      exit_code: 100,
      failed_line: 12,
      gpu_model: "",
      future_field: { a: 1 },
    });
    // The error text as stored: its address masked.
    expect(body.error).toBe(r.error);
    expect(String(body.error)).not.toContain("10.0.0.1");
    const omitted = ["error", "cpu_model", "future_field", "repo_slug"];
    expect(Object.keys(parsed(r, omitted)).filter((k) => omitted.includes(k))).toEqual([]);
  });

  test("/telemetry v1: no payload_version, gpu_passthrough is the host's GPU; a container ping stays minimal", () => {
    const r = telemetry({
      random_id: "r",
      type: "lxc",
      nsapp: "docker",
      status: "installing",
      gpu_passthrough: "igpu",
      has_arm: "false",
    });
    expect(parsed(r)).toEqual({
      random_id: "r",
      execution_id: "r",
      type: "lxc",
      nsapp: "docker",
      status: "installing",
      gpu_passthrough: "igpu",
      has_arm: false,
    });
    const ping = telemetry({
      payload_version: 2,
      random_id: "r",
      execution_id: "e",
      type: "lxc",
      nsapp: "docker",
      status: "configuring",
      platform: "pve",
      repo_source: "ProxmoxVED",
      repo_slug: "",
    });
    expect(parsed(ping)).toEqual({
      payload_version: 2,
      random_id: "r",
      execution_id: "e",
      type: "lxc",
      nsapp: "docker",
      status: "configuring",
      platform: "pve",
      repo_source: "ProxmoxVED",
      repo_slug: "",
    });
  });

  test("a client's key named like an object's own (__proto__, constructor) is a key like any other", () => {
    const r = telemetry(
      JSON.parse(
        '{"random_id":"r","type":"lxc","nsapp":"x","status":"installing","__proto__":{"polluted":1},"constructor":"c"}',
      ) as JsonObject,
    );
    const body = relayBody(r, []);
    expect(JSON.parse(body)).toEqual(
      JSON.parse(
        '{"random_id":"r","execution_id":"r","type":"lxc","nsapp":"x","status":"installing","__proto__":{"polluted":1},"constructor":"c"}',
      ),
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("relayTargets", () => {
  test.each([
    ["https://telemetry.community-scripts.org", "https://telemetry.community-scripts.org"],
    ["https://telemetry.community-scripts.org/", "https://telemetry.community-scripts.org"],
    ["https://telemetry.community-scripts.org/telemetry", "https://telemetry.community-scripts.org"],
    ["http://10.0.0.5:8080/stats/", "http://10.0.0.5:8080/stats"],
    ["http://10.0.0.5:8080/stats/upload", "http://10.0.0.5:8080/stats"],
    ["http://10.0.0.5:8080/stats/upload/updatestatus", "http://10.0.0.5:8080/stats"],
  ])("%s", (url, base) => {
    expect(relayTargets(url)).toEqual({
      telemetry: `${base}/telemetry`,
      upload: `${base}/upload`,
      updatestatus: `${base}/upload/updatestatus`,
    });
  });
});

describe("relayable", () => {
  const policy = (repos: string[]): RelayPolicy => ({
    protocols: ["telemetry", "upload"],
    repos,
    omit: [],
    maxBytes: 1,
  });
  test.each([
    // repo_source, repo_slug -> what it counts as (the community service's rules)
    ["ProxmoxVE", "community-scripts/ProxmoxVE", "proxmoxve"],
    [null, null, "proxmoxve"],
    [null, "community-scripts/ProxmoxVED", "proxmoxved"],
    [null, "someone/ProxmoxVE", "proxmoxve"],
    [null, "someone/my-scripts", "external"],
    ["external", "someone/ProxmoxVE", "external"],
  ])("%s %s counts as %s", (repoSource, repoSlug, source) => {
    expect(relayRepo({ repoSource, repoSlug }).source).toBe(source);
  });

  test("an item with / is a slug (any case), any other a repo_source; none: everything", () => {
    const fork = { repoSource: "external", repoSlug: "Someone/ProxmoxVE" };
    const main = { repoSource: "ProxmoxVE", repoSlug: "community-scripts/ProxmoxVE" };
    expect(relayable(policy(["proxmoxve"]), main)).toBe(true);
    expect(relayable(policy(["proxmoxve"]), fork)).toBe(false);
    expect(relayable(policy(["proxmoxve"]), null)).toBe(true); // /upload: no repository, counted as ProxmoxVE
    expect(relayable(policy(["someone/proxmoxve"]), fork)).toBe(true);
    expect(relayable(policy(["community-scripts/proxmoxve"]), main)).toBe(true);
    expect(relayable(policy([]), fork)).toBe(true);
  });
});

describe("backoffMs", () => {
  test("doubles from 1 s to at most 5 min, half of it random (equal jitter)", () => {
    expect([1, 2, 3, 4, 9, 10, 50].map((n) => backoffMs(n, () => 0))).toEqual([
      500, 1000, 2000, 4000, 128_000, 150_000, 150_000,
    ]);
    expect([1, 2, 3, 4, 9, 10, 50].map((n) => backoffMs(n, () => 1))).toEqual([
      1000, 2000, 4000, 8000, 256_000, 300_000, 300_000,
    ]);
    expect(backoffMs(5, () => 0.5)).toBe(12_000);
  });
});
