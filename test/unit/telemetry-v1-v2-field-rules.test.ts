// Field rules of /telemetry payloads (v1 and v2), table by table.
import { describe, expect, test } from "bun:test";
import { defaults } from "../../src/config.ts";
import { normalizeTelemetry } from "../../src/domain/normalize.ts";

const OPTS = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };
const base = { random_id: "r1", type: "lxc", nsapp: "nginx", status: "installing" };
const norm = (body: Record<string, unknown>) => normalizeTelemetry({ ...base, ...body }, OPTS);
const value = (body: Record<string, unknown>) => {
  const c = norm(body);
  if (!c.ok) throw new Error(c.message);
  return c.value;
};

describe("payload versions", () => {
  test("v1 (no payload_version): gpu_passthrough is what the host has", () => {
    const r = value({ gpu_passthrough: "iGPU" });
    expect(r.payloadVersion).toBe(1);
    expect(r.fields).toMatchObject({ hostGpu: "igpu", gpuPassthrough: null });
  });
  test("v2: gpu_passthrough is yes/no, passed to the guest", () => {
    const r = value({ payload_version: 2, gpu_passthrough: "yes" });
    expect(r.payloadVersion).toBe(2);
    expect(r.fields).toMatchObject({ gpuPassthrough: "yes", hostGpu: null });
  });
  test("execution_id defaults to random_id (v1 revisions without it, and empty)", () => {
    expect(value({}).executionId).toBe("r1");
    expect(value({ execution_id: "" }).executionId).toBe("r1");
    expect(value({ execution_id: "e2" }).executionId).toBe("e2");
  });
  test("unknown fields of a newer client are kept raw in extra", () => {
    const r = value({ payload_version: 3, vram_mb: 8192, storage: { kind: "zfs" } });
    expect(r.payloadVersion).toBe(3);
    expect(JSON.parse(r.fields!.extra!)).toEqual({ vram_mb: 8192, storage: { kind: "zfs" } });
    expect(value({}).fields!.extra).toBeNull();
  });
});

describe("fields", () => {
  const rows: [string, Record<string, unknown>, Record<string, unknown>][] = [
    [
      "numbers interpolated raw or quoted",
      { core_count: "4", disk_size: "32G", ram_size: "" },
      { coreCount: 4, diskSize: 32, ramSize: null },
    ],
    ["has_arm as a bare word or a string", { has_arm: "false" }, { hasArm: false }],
    ["has_arm true", { has_arm: true }, { hasArm: true }],
    ["arch and platform lowercased", { arch: "AMD64", platform: "Incus" }, { arch: "amd64", platform: "incus" }],
    ['"" stays apart from absent', { os_version: "", method: undefined }, { osVersion: "", method: null }],
    [
      "repo fields as sent",
      { repo_source: "external", repo_slug: "me/ProxmoxVE" },
      { repoSource: "external", repoSlug: "me/ProxmoxVE" },
    ],
    ["host version incus-6.x", { pve_version: "incus-6.0" }, { pveVersion: "incus-6.0" }],
  ];
  for (const [name, body, expected] of rows) test(name, () => expect(value(body).fields).toMatchObject(expected));

  const endings: [string, Record<string, unknown>, Record<string, unknown>][] = [
    [
      "success: exit code 0, no category",
      { status: "success", exit_code: 0 },
      { outcome: "success", exitCode: 0, errorCategory: null },
    ],
    [
      "failed with the client's category",
      { status: "failed", exit_code: 100, error_category: "dependency" },
      { outcome: "failed", exitCode: 100, errorCategory: "dependency" },
    ],
    [
      "failed without one: derived from the code",
      { status: "failed", exit_code: 28, error_category: "" },
      { errorCategory: "timeout" },
    ],
    [
      "a reference-server word mapped onto the client's list",
      { status: "failed", exit_code: 100, error_category: "apt" },
      { errorCategory: "dependency" },
    ],
    [
      "aborted: user_aborted",
      { status: "aborted", exit_code: 130 },
      { outcome: "aborted", errorCategory: "user_aborted" },
    ],
    [
      "progress: no exit code even when 0 is sent",
      { status: "validation", exit_code: 0 },
      { outcome: "in_progress", exitCode: null },
    ],
    [
      'failed_line 0 and failed_command "" mean none',
      { status: "failed", exit_code: 1, failed_line: 0, failed_command: "" },
      { failedLine: null, failedCommand: null },
    ],
    [
      "failed_command and line kept",
      { status: "failed", exit_code: 1, failed_line: 12, failed_command: "apt-get install -y x" },
      { failedLine: 12, failedCommand: "apt-get install -y x" },
    ],
  ];
  for (const [name, body, expected] of endings) test(name, () => expect(value(body)).toMatchObject(expected));

  test("error texts keep 10 KiB of log whole, IPs masked", () => {
    const log = Array.from({ length: 400 }, (_, i) => `line ${i}: fetching from 192.168.1.${i % 250}`).join("\n");
    const r = value({
      status: "failed",
      exit_code: 1,
      error: `exit_code=1 | General error | at line 3: make\n---\n${log}`,
    });
    expect(r.error!.length).toBeGreaterThan(10_000);
    expect(r.error).not.toContain("192.168.1.");
    expect(r.error!.split("\n")).toHaveLength(402);
  });
});

describe("refusals name the field", () => {
  const rows: [string, Record<string, unknown>, string][] = [
    ["exit_code out of 0-255", { exit_code: 256 }, "exit_code"],
    ["install_duration over a day", { install_duration: 90_000 }, "install_duration"],
    ["unknown type", { type: "docker" }, "type"],
    ["missing status", { status: undefined }, "status"],
    ["execution_id with control characters", { execution_id: "a\u0001b" }, "execution_id"],
    ["has_arm not a boolean", { has_arm: "maybe" }, "has_arm"],
  ];
  for (const [name, body, field] of rows) {
    test(name, () => {
      const c = norm(body);
      expect(c.ok).toBe(false);
      if (!c.ok) expect(c.field).toBe(field);
    });
  }
});
