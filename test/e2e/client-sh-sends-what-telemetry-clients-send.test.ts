// scripts/client.sh --protocol v1|v2: today's installer clients (POST /telemetry).
// A capture server on 127.0.0.1 records every request raw; the script runs under bash.
// The research samples (telemetry protocol notes, section C) are compared byte for byte.
import { afterAll, beforeAll, beforeEach, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Starts processes: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(60_000);

const SCRIPT = join(import.meta.dir, "../..", "scripts", "client.sh");
const BASH = Bun.which("bash") ?? "/bin/bash";
const FULL_PATH = process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin";

interface Captured {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

let captured: Captured[] = [];
/** Answer for the n-th request (0-based) of the current test. */
let respond: (n: number) => Response = () => new Response("accepted", { status: 202 });

let server: ReturnType<typeof Bun.serve>;
let base = "";
let tmp = "";
let noJqPath = ""; // bash, curl, awk and the coreutils the script uses; no jq, no dpkg
let armPath = ""; // the same plus a fake `uname` that says aarch64

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      const bytes = new Uint8Array(await req.arrayBuffer());
      const n = captured.length;
      captured.push({
        method: req.method,
        path: url.pathname,
        headers: Object.fromEntries(req.headers.entries()),
        body: new TextDecoder().decode(bytes),
      });
      return respond(n);
    },
  });
  base = `http://127.0.0.1:${server.port}`;

  tmp = mkdtempSync(join(tmpdir(), "client-sh-telemetry-"));
  noJqPath = join(tmp, "nojq");
  armPath = join(tmp, "arm");
  for (const dir of [noJqPath, armPath]) {
    Bun.spawnSync(["mkdir", "-p", dir]);
    for (const tool of ["bash", "curl", "awk", "cat", "tr", "head", "date", "uname", "sleep", "od"]) {
      if (dir === armPath && tool === "uname") continue;
      const real = Bun.which(tool);
      if (!real) throw new Error(`${tool} not found`);
      symlinkSync(real, join(dir, tool));
    }
  }
  writeFileSync(join(armPath, "uname"), '#!/bin/sh\nif [ "$1" = -r ]; then echo 6.8.0-arm; else echo aarch64; fi\n');
  chmodSync(join(armPath, "uname"), 0o755);
});

afterAll(() => {
  server.stop(true);
  rmSync(tmp, { recursive: true, force: true });
});

beforeEach(() => {
  captured = [];
  respond = () => new Response("accepted", { status: 202 });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the script under bash with a clean environment (nothing leaks in from the caller). */
async function run(args: string[], env: Record<string, string> = {}, path = FULL_PATH): Promise<Run> {
  const proc = Bun.spawn([BASH, SCRIPT, ...args], {
    env: { PATH: path, INSTALLSTATS_URL: base, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

type Proto = "v1" | "v2";
/**
 * v1/v2 run without the 1 s pause between attempts. A v2 final is sent only when the run attempted
 * its start report (POST_TO_API_DONE set, as install and start set it): a final on its own here
 * stands for the end of such a run unless a test says otherwise.
 */
function tm(p: Proto, args: string[], env: Record<string, string> = {}, path = FULL_PATH): Promise<Run> {
  return run(
    ["--protocol", p, "--retry-sleep", "0", ...args],
    p === "v2" ? { POST_TO_API_DONE: "true", ...env } : env,
    path,
  );
}

type Body = Record<string, unknown>;
const bodies = (): string[] => captured.map((c) => c.body);
const parsed = (): Body[] => captured.map((c) => JSON.parse(c.body) as Body);
const statuses = (): string[] => parsed().map((b) => b.status as string);

/** The heredoc layout of the real builder, rebuilt from the parsed body. */
function heredoc(obj: Body): string {
  return `{\n${Object.entries(obj)
    .map(([k, v]) => `    ${JSON.stringify(k)}: ${JSON.stringify(v)}`)
    .join(",\n")}\n}`;
}

// ------------------------------------------------------------------ research samples (section C)
const SAMPLES: Record<string, string> = {
  "C.1": String.raw`{
    "payload_version": 2,
    "random_id": "3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42",
    "execution_id": "3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42",
    "type": "lxc",
    "nsapp": "jellyfin",
    "status": "installing",
    "ct_type": 1,
    "disk_size": 8,
    "core_count": 2,
    "ram_size": 2048,
    "os_type": "debian",
    "os_version": "13",
    "pve_version": "8.4.1",
    "method": "default",
    "exit_code": 0,
    "error": "",
    "error_category": "",
    "install_duration": 0,
    "cpu_vendor": "intel",
    "cpu_model": "12th Gen Intel Core i5-12500",
    "gpu_vendor": "intel",
    "gpu_model": "Intel Corporation Alder Lake-P GT2 [Iris Xe Graphics]",
    "gpu_passthrough": "yes",
    "ram_speed": "4800",
    "arch": "amd64",
    "platform": "pve",
    "has_arm": false,
    "kernel_version": "6.8.12-9-pve",
    "app_version": "10.10.7",
    "failed_command": "",
    "failed_line": 0,
    "repo_source": "ProxmoxVED",
    "repo_slug": "community-scripts/ProxmoxVED"
}`,
  "C.2": String.raw`{
    "payload_version": 2,
    "random_id": "3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42",
    "execution_id": "3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42",
    "type": "lxc",
    "nsapp": "jellyfin",
    "status": "validation",
    "ct_type": 1,
    "disk_size": 8,
    "core_count": 2,
    "ram_size": 2048,
    "os_type": "debian",
    "os_version": "13",
    "pve_version": "8.4.1",
    "method": "default",
    "exit_code": 0,
    "error": "",
    "error_category": "",
    "install_duration": 3,
    "cpu_vendor": "intel",
    "cpu_model": "12th Gen Intel Core i5-12500",
    "gpu_vendor": "intel",
    "gpu_model": "Intel Corporation Alder Lake-P GT2 [Iris Xe Graphics]",
    "gpu_passthrough": "yes",
    "ram_speed": "4800",
    "arch": "amd64",
    "platform": "pve",
    "has_arm": false,
    "kernel_version": "6.8.12-9-pve",
    "app_version": "10.10.7",
    "failed_command": "",
    "failed_line": 0,
    "repo_source": "ProxmoxVED",
    "repo_slug": "community-scripts/ProxmoxVED"
}`,
  "C.3": String.raw`{"payload_version":2,"random_id":"3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42","execution_id":"3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42","type":"lxc","nsapp":"jellyfin","status":"configuring","platform":"pve","repo_source":"ProxmoxVED","repo_slug":"community-scripts/ProxmoxVED"}`,
  "C.4": String.raw`{
    "payload_version": 2,
    "random_id": "3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42",
    "execution_id": "3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42",
    "type": "lxc",
    "nsapp": "jellyfin",
    "status": "success",
    "ct_type": 1,
    "disk_size": 8,
    "core_count": 2,
    "ram_size": 2048,
    "os_type": "debian",
    "os_version": "13",
    "pve_version": "8.4.1",
    "method": "default",
    "exit_code": 0,
    "error": "",
    "error_category": "",
    "install_duration": 187,
    "cpu_vendor": "intel",
    "cpu_model": "12th Gen Intel Core i5-12500",
    "gpu_vendor": "intel",
    "gpu_model": "Intel Corporation Alder Lake-P GT2 [Iris Xe Graphics]",
    "gpu_passthrough": "yes",
    "ram_speed": "4800",
    "arch": "amd64",
    "platform": "pve",
    "has_arm": false,
    "kernel_version": "6.8.12-9-pve",
    "app_version": "10.10.7",
    "failed_command": "",
    "failed_line": 0,
    "repo_source": "ProxmoxVED",
    "repo_slug": "community-scripts/ProxmoxVED"
}`,
  "C.5": String.raw`{
    "payload_version": 2,
    "random_id": "3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42",
    "execution_id": "3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42",
    "type": "lxc",
    "nsapp": "jellyfin",
    "status": "failed",
    "ct_type": 1,
    "disk_size": 8,
    "core_count": 2,
    "ram_size": 2048,
    "os_type": "debian",
    "os_version": "13",
    "pve_version": "8.4.1",
    "method": "default",
    "exit_code": 100,
    "error": "exit_code=100 | APT: Package manager error (broken packages / dependency problems) | at line 42: apt-get install -y jellyfin-ffmpeg7\n---\nE: Failed to fetch http://192.168.10.5:3142/repo.jellyfin.org/debian/pool/main/j/jellyfin-ffmpeg7_7.1.1-7_amd64.deb  404  Not Found [IP: 192.168.10.5 3142]\nE: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?\ndpkg: \"quoted\" path C:\\temp\tTAB",
    "error_category": "dependency",
    "install_duration": 95,
    "cpu_vendor": "intel",
    "cpu_model": "12th Gen Intel Core i5-12500",
    "gpu_vendor": "intel",
    "gpu_model": "Intel Corporation Alder Lake-P GT2 [Iris Xe Graphics]",
    "gpu_passthrough": "yes",
    "ram_speed": "4800",
    "arch": "amd64",
    "platform": "pve",
    "has_arm": false,
    "kernel_version": "6.8.12-9-pve",
    "app_version": "10.10.7",
    "failed_command": "apt-get install -y jellyfin-ffmpeg7",
    "failed_line": 42,
    "repo_source": "ProxmoxVED",
    "repo_slug": "community-scripts/ProxmoxVED"
}`,
  "C.6": String.raw`{
    "payload_version": 2,
    "random_id": "3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42",
    "execution_id": "c1d2e3f4-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
    "type": "lxc",
    "nsapp": "jellyfin",
    "status": "aborted",
    "ct_type": 1,
    "disk_size": 8,
    "core_count": 2,
    "ram_size": 2048,
    "os_type": "debian",
    "os_version": "13",
    "pve_version": "8.4.1",
    "method": "default",
    "exit_code": 130,
    "error": "exit_code=130 | Aborted by user (SIGINT)",
    "error_category": "user_aborted",
    "install_duration": 41,
    "cpu_vendor": "intel",
    "cpu_model": "12th Gen Intel Core i5-12500",
    "gpu_vendor": "intel",
    "gpu_model": "Intel Corporation Alder Lake-P GT2 [Iris Xe Graphics]",
    "gpu_passthrough": "yes",
    "ram_speed": "4800",
    "arch": "amd64",
    "platform": "pve",
    "has_arm": false,
    "kernel_version": "6.8.12-9-pve",
    "app_version": "10.10.7",
    "failed_command": "",
    "failed_line": 0,
    "repo_source": "ProxmoxVED",
    "repo_slug": "community-scripts/ProxmoxVED"
}`,
  "C.7": String.raw`{
    "payload_version": 2,
    "random_id": "9e8d7c6b-5a49-4382-a716-151413121110",
    "execution_id": "9e8d7c6b-5a49-4382-a716-151413121110",
    "type": "vm",
    "nsapp": "debian13-vm",
    "status": "installing",
    "ct_type": 2,
    "disk_size": 32,
    "core_count": 2,
    "ram_size": 4096,
    "os_type": "debian",
    "os_version": "13",
    "pve_version": "8.4.1",
    "method": "default",
    "exit_code": 0,
    "error": "",
    "error_category": "",
    "install_duration": 0,
    "cpu_vendor": "intel",
    "cpu_model": "12th Gen Intel Core i5-12500",
    "gpu_vendor": "intel",
    "gpu_model": "Intel Corporation Alder Lake-P GT2 [Iris Xe Graphics]",
    "gpu_passthrough": "no",
    "ram_speed": "4800",
    "arch": "amd64",
    "platform": "pve",
    "has_arm": false,
    "kernel_version": "6.8.12-9-pve",
    "app_version": "",
    "failed_command": "",
    "failed_line": 0,
    "repo_source": "ProxmoxVED",
    "repo_slug": "community-scripts/ProxmoxVED"
}`,
  "C.8": String.raw`{
    "payload_version": 2,
    "random_id": "8f89fe1c-3adc-423f-b79b-4f04cbdb65a5",
    "execution_id": "8f89fe1c-3adc-423f-b79b-4f04cbdb65a5",
    "type": "pve",
    "nsapp": "post-pve-install",
    "status": "failed",
    "exit_code": 130,
    "error": "exit_code=130 | Aborted by user (SIGINT)",
    "error_category": "user_aborted",
    "install_duration": 12,
    "pve_version": "8.4.1",
    "platform": "pve",
    "repo_source": "ProxmoxVED",
    "repo_slug": "community-scripts/ProxmoxVED"
}`,
  "C.9": String.raw`{
    "payload_version": 2,
    "random_id": "667da2a7-5b59-4f4b-8121-24f14ba4f771",
    "execution_id": "667da2a7-5b59-4f4b-8121-24f14ba4f771",
    "type": "addon",
    "nsapp": "add-tailscale-lxc",
    "status": "success",
    "exit_code": 0,
    "error": "",
    "error_category": "",
    "install_duration": 33,
    "os_type": "debian",
    "os_version": "12",
    "platform": "",
    "repo_source": "ProxmoxVED",
    "repo_slug": "community-scripts/ProxmoxVED"
}`,
  "C.10": String.raw`{
    "random_id": "5b0c2d7e-11aa-4c3e-8f0b-2e6a9d4c7b10",
    "execution_id": "5b0c2d7e-11aa-4c3e-8f0b-2e6a9d4c7b10",
    "type": "lxc",
    "nsapp": "vaultwarden",
    "status": "installing",
    "ct_type": 1,
    "disk_size": 6,
    "core_count": 4,
    "ram_size": 6144,
    "os_type": "debian",
    "os_version": "12",
    "pve_version": "8.4.1",
    "method": "advanced",
    "exit_code": 0,
    "error": "",
    "error_category": "",
    "install_duration": 0,
    "cpu_vendor": "amd",
    "cpu_model": "AMD Ryzen 7 5700G with Radeon Graphics",
    "gpu_vendor": "amd",
    "gpu_model": "Cezanne [Radeon Vega Series / Radeon Vega Mobile Series]",
    "gpu_passthrough": "igpu",
    "ram_speed": "3200",
    "arch": "amd64",
    "platform": "pve",
    "has_arm": false,
    "repo_source": "ProxmoxVE",
    "repo_slug": "community-scripts/ProxmoxVE"
}`,
  "C.11": String.raw`{"random_id":"5b0c2d7e-11aa-4c3e-8f0b-2e6a9d4c7b10","execution_id":"5b0c2d7e-11aa-4c3e-8f0b-2e6a9d4c7b10","type":"lxc","nsapp":"vaultwarden","status":"configuring","platform":"pve","repo_source":"ProxmoxVE","repo_slug":"community-scripts/ProxmoxVE"}`,
  "C.12": String.raw`{
    "random_id": "0f944141-dac3-4659-a46f-117d0d2d1bb9",
    "execution_id": "0f944141-dac3-4659-a46f-117d0d2d1bb9",
    "type": "pve",
    "nsapp": "clean-lxcs",
    "status": "success",
    "exit_code": 0,
    "error": "",
    "error_category": "",
    "install_duration": 8,
    "pve_version": "8.4.1",
    "platform": "pve",
    "repo_source": "ProxmoxVE",
    "repo_slug": "community-scripts/ProxmoxVE"
}`,
};

const KEYS = {
  v2: Object.keys(JSON.parse(SAMPLES["C.1"]!) as Body),
  v1: Object.keys(JSON.parse(SAMPLES["C.10"]!) as Body),
};
const PING_KEYS = {
  v2: Object.keys(JSON.parse(SAMPLES["C.3"]!) as Body),
  v1: Object.keys(JSON.parse(SAMPLES["C.11"]!) as Body),
};
const TOOL_KEYS = {
  v2: Object.keys(JSON.parse(SAMPLES["C.8"]!) as Body),
  v1: Object.keys(JSON.parse(SAMPLES["C.12"]!) as Body),
};
const ADDON_KEYS = {
  v2: Object.keys(JSON.parse(SAMPLES["C.9"]!) as Body),
  v1: Object.keys(JSON.parse(SAMPLES["C.9"]!) as Body).filter((k) => k !== "payload_version"),
};
/** The JSON kind of each key, from the samples (numbers raw, has_arm a boolean). */
const KIND: Record<string, string> = {};
for (const s of Object.values(SAMPLES)) {
  for (const [k, v] of Object.entries(JSON.parse(s) as Body)) KIND[k] = typeof v;
}

function expectShape(body: string, keys: string[]): Body {
  const obj = JSON.parse(body) as Body;
  expect(Object.keys(obj)).toEqual(keys);
  for (const k of keys) expect({ k, kind: typeof obj[k] as string }).toEqual({ k, kind: KIND[k]! });
  return obj;
}

// Our explanation table words things differently from the client's; samples are compared
// with the client's texts swapped for ours.
const OURS: Record<string, [string, string]> = {
  100: [
    "APT: Package manager error (broken packages / dependency problems)",
    "APT: package manager error (broken or unmet dependencies)",
  ],
  130: ["Aborted by user (SIGINT)", "Interrupted by user (SIGINT, Ctrl+C)"],
};
const ours = (sample: string, code: number) => sample.replace(OURS[code]![0], OURS[code]![1]);

const JELLYFIN: Record<string, string> = {
  RANDOM_UUID: "3f2b8c1e-7a4d-4e2b-9c61-0d5e8a7b1f42",
  NSAPP: "jellyfin",
  CT_TYPE: "1",
  DISK_SIZE: "8",
  CORE_COUNT: "2",
  RAM_SIZE: "2048",
  var_os: "debian",
  var_version: "13",
  PVEVERSION: "8.4.1",
  METHOD: "default",
  CPU_VENDOR: "intel",
  CPU_MODEL: "12th Gen Intel Core i5-12500",
  GPU_VENDOR: "intel",
  GPU_MODEL: "Intel Corporation Alder Lake-P GT2 [Iris Xe Graphics]",
  var_gpu: "yes",
  RAM_SPEED: "4800",
  TELEMETRY_PLATFORM: "pve",
  HAS_ARM: "false",
  KERNEL_VERSION: "6.8.12-9-pve",
  APPLICATION_VERSION: "10.10.7",
  REPO_SOURCE: "ProxmoxVED",
  REPO_SLUG: "community-scripts/ProxmoxVED",
};
const VAULTWARDEN: Record<string, string> = {
  RANDOM_UUID: "5b0c2d7e-11aa-4c3e-8f0b-2e6a9d4c7b10",
  NSAPP: "vaultwarden",
  DISK_SIZE: "6",
  CORE_COUNT: "4",
  RAM_SIZE: "6144",
  var_os: "debian",
  var_version: "12",
  PVEVERSION: "8.4.1",
  METHOD: "advanced",
  CPU_VENDOR: "amd",
  CPU_MODEL: "AMD Ryzen 7 5700G with Radeon Graphics",
  GPU_VENDOR: "amd",
  GPU_MODEL: "Cezanne [Radeon Vega Series / Radeon Vega Mobile Series]",
  GPU_PASSTHROUGH: "igpu",
  RAM_SPEED: "3200",
  TELEMETRY_PLATFORM: "pve",
  REPO_SOURCE: "ProxmoxVE",
};
const ARCH = ["--arch", "amd64"];
/**
 * A start report's install_duration is the time since its own timer started: 0, or 1 when the
 * script crosses a second boundary (a loaded CI machine did). A timer starting in the future
 * reads 0 (elapsed clamps at 0), so the samples' 0 holds however slow the machine.
 */
const TIMER_AT_ZERO = { INSTALL_START_TIME: "4102444800" };

describe.each(["jq", "awk"])("research samples, byte for byte (escaping with %s)", (mode) => {
  const esc: Record<string, string> = mode === "awk" ? { CLIENT_NO_JQ: "1" } : {};

  test("C.1 v2 start: 33 keys, payload_version first, UA community-scripts-core/2", async () => {
    const r = await tm("v2", [...ARCH, "start"], { ...JELLYFIN, ...esc, ...TIMER_AT_ZERO });
    expect(r).toEqual({ code: 0, stdout: "telemetry installing 202\n", stderr: "" });
    expect(bodies()).toEqual([SAMPLES["C.1"]!]);
    const c = captured[0]!;
    expect([c.method, c.path, c.headers["content-type"], c.headers["user-agent"]]).toEqual([
      "POST",
      "/telemetry",
      "application/json",
      "community-scripts-core/2",
    ]);
  });

  test("C.2 v2 host progress ping: the full payload, the timer running", async () => {
    const started = String(Math.floor(Date.now() / 1000) - 3);
    const r = await tm("v2", [...ARCH, "progress", "validation"], { ...JELLYFIN, ...esc, INSTALL_START_TIME: started });
    expect(r.stdout).toBe("telemetry validation 202\n");
    const duration = Number(/"install_duration": (\d+)/.exec(bodies()[0]!)![1]);
    expect(duration).toBeGreaterThanOrEqual(3);
    expect(duration).toBeLessThanOrEqual(5);
    expect(bodies()[0]!.replace(/"install_duration": \d+/, '"install_duration": 3')).toBe(SAMPLES["C.2"]!);
  });

  test("C.3 v2 in-container ping: one line, 9 keys, with the UA", async () => {
    const r = await tm("v2", ["ping"], { ...JELLYFIN, ...esc });
    expect(r.stdout).toBe("telemetry configuring 202\n");
    expect(bodies()).toEqual([SAMPLES["C.3"]!]);
    expect(captured[0]!.headers["user-agent"]).toBe("community-scripts-core/2");
  });

  test("C.4 v2 final success (done -> success, exit 0)", async () => {
    const r = await tm("v2", [...ARCH, "--duration", "187", "final", "done"], { ...JELLYFIN, ...esc });
    expect(r.stdout).toBe("telemetry success 202\n");
    expect(bodies()).toEqual([SAMPLES["C.4"]!]);
  });

  test("C.5 v2 final failed: header, at line, log output; escapes; failed_command/line", async () => {
    const log = join(tmp, `c5-${mode}.log`);
    writeFileSync(
      log,
      "E: Failed to fetch http://192.168.10.5:3142/repo.jellyfin.org/debian/pool/main/j/jellyfin-ffmpeg7_7.1.1-7_amd64.deb  404  Not Found [IP: 192.168.10.5 3142]\n" +
        "E: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?\n" +
        'dpkg: "quoted" path C:\\temp\tTAB\n',
    );
    const args = [...ARCH, "--duration", "95", "--log", log, "final", "failed", "100"];
    const r = await tm("v2", args, {
      ...JELLYFIN,
      ...esc,
      FAILED_COMMAND: "apt-get install -y jellyfin-ffmpeg7",
      FAILED_LINE: "42",
    });
    expect(r.stdout).toBe("telemetry failed 202\n");
    expect(bodies()).toEqual([ours(SAMPLES["C.5"]!, 100)]);
  });

  test("C.6 v2 final aborted (failed 130 -> aborted, header only, user_aborted)", async () => {
    const args = [
      ...ARCH,
      "--execution-id",
      "c1d2e3f4-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
      "--duration",
      "41",
      "final",
      "failed",
      "130",
    ];
    const r = await tm("v2", args, { ...JELLYFIN, ...esc });
    expect(r.stdout).toBe("telemetry aborted 202\n");
    expect(bodies()).toEqual([ours(SAMPLES["C.6"]!, 130)]);
  });

  test("C.7 v2 VM start (--vm, 32G stripped, empty METHOD -> default, gpu no)", async () => {
    const env = {
      ...JELLYFIN,
      ...esc,
      RANDOM_UUID: "9e8d7c6b-5a49-4382-a716-151413121110",
      NSAPP: "debian13-vm",
      DISK_SIZE: "32G",
      RAM_SIZE: "4096",
      METHOD: "",
      var_gpu: "",
      APPLICATION_VERSION: "",
      ...TIMER_AT_ZERO,
    };
    await tm("v2", [...ARCH, "--vm", "start"], env);
    expect(bodies()).toEqual([SAMPLES["C.7"]!]);
  });

  test("C.8 v2 tool one-shot (failed 130 stays failed, user_aborted)", async () => {
    const r = await tm(
      "v2",
      ["--id", "8f89fe1c-3adc-423f-b79b-4f04cbdb65a5", "--duration", "12", "tool", "post-pve-install", "failed", "130"],
      {
        ...JELLYFIN,
        ...esc,
      },
    );
    expect(r.stdout).toBe("telemetry failed 202\n");
    expect(bodies()).toEqual([ours(SAMPLES["C.8"]!, 130)]);
  });

  test("C.9 v2 addon one-shot (os fields, empty platform)", async () => {
    const env: Record<string, string> = { ...JELLYFIN, ...esc, var_version: "12" };
    delete env.TELEMETRY_PLATFORM;
    await tm(
      "v2",
      [
        "--id",
        "667da2a7-5b59-4f4b-8121-24f14ba4f771",
        "--duration",
        "33",
        "addon",
        "add-tailscale-lxc",
        "success",
        "0",
      ],
      env,
    );
    expect(bodies()).toEqual([SAMPLES["C.9"]!]);
  });

  test("C.10 v1 start: 28 keys, no payload_version, curl's UA", async () => {
    const r = await tm("v1", [...ARCH, "start"], { ...VAULTWARDEN, ...esc, ...TIMER_AT_ZERO });
    expect(r.stdout).toBe("telemetry installing 202\n");
    expect(bodies()).toEqual([SAMPLES["C.10"]!]);
    expect(captured[0]!.headers["user-agent"]).toStartWith("curl/");
  });

  test("C.11 v1 in-container ping: one line, 8 keys", async () => {
    await tm("v1", ["ping"], { ...VAULTWARDEN, ...esc });
    expect(bodies()).toEqual([SAMPLES["C.11"]!]);
    expect(captured[0]!.headers["user-agent"]).toStartWith("curl/");
  });

  test("C.12 v1 tool one-shot", async () => {
    await tm(
      "v1",
      ["--id", "0f944141-dac3-4659-a46f-117d0d2d1bb9", "--duration", "8", "tool", "clean-lxcs", "success", "0"],
      {
        ...VAULTWARDEN,
        ...esc,
      },
    );
    expect(bodies()).toEqual([SAMPLES["C.12"]!]);
  });
});

// ------------------------------------------------------------------ shapes of every report kind
describe.each(["v1", "v2"] as const)("%s report shapes", (p) => {
  test("start, progress, final (every status): the full key list, kinds and layout", async () => {
    await tm(p, ["start"]);
    await tm(p, ["progress", "validation"]);
    await tm(p, ["progress", "configuring"]);
    for (const args of [["success"], ["failed", "100"], ["failed", "130"], ["aborted"], ["unknown"]]) {
      await tm(p, ["final", ...args]);
    }
    expect(statuses()).toEqual([
      "installing",
      "validation",
      "configuring",
      "success",
      "failed",
      "aborted",
      "aborted",
      "unknown",
    ]);
    for (const c of captured) {
      expectShape(c.body, KEYS[p]);
      expect(c.body).toBe(heredoc(JSON.parse(c.body) as Body));
      expect(c.headers["user-agent"]).toBe(p === "v2" ? "community-scripts-core/2" : c.headers["user-agent"]!);
      if (p === "v1") expect(c.headers["user-agent"]).toStartWith("curl/");
    }
  });

  test("ping: one line without spaces, status configuring, type lxc", async () => {
    await tm(p, ["--vm", "ping"]);
    const body = bodies()[0]!;
    const obj = expectShape(body, PING_KEYS[p]);
    expect(body).toBe(JSON.stringify(obj));
    expect([obj.status, obj.type]).toEqual(["configuring", "lxc"]);
  });

  test("tool and addon: their own key lists, type pve / addon", async () => {
    await tm(p, ["tool", "clean-lxcs"]);
    await tm(p, ["addon", "add-netbird-lxc", "failed", "7"]);
    const [tool, addon] = captured.map((c) => c.body);
    const t = expectShape(tool!, TOOL_KEYS[p]);
    const a = expectShape(addon!, ADDON_KEYS[p]);
    expect(tool).toBe(heredoc(t));
    expect(addon).toBe(heredoc(a));
    expect([t.type, t.status, t.exit_code, t.error, t.error_category]).toEqual(["pve", "success", 0, "", ""]);
    expect([a.type, a.status, a.exit_code, a.error_category, a.platform]).toEqual([
      "addon",
      "failed",
      7,
      "network",
      "",
    ]);
    expect(a.error).toBe("exit_code=7 | Unknown error");
  });

  test("final: the client's status and exit-code mapping", async () => {
    // v1 (ProxmoxVE misc/api.func) defaults a missing code to 1 and files declines as failures;
    // v2 (the newest engine) sends 199 for a code it was not given, and the declines as aborts.
    const v2 = p === "v2";
    const cases: [string[], string, number, string][] = [
      [["done"], "success", 0, ""],
      [["success", "5", "ignored"], "success", 0, ""],
      [["failed"], "failed", v2 ? 199 : 1, v2 ? "unknown" : "shell"],
      [["failed", "129"], "aborted", 129, "user_aborted"],
      [["failed", "143"], "aborted", 143, "user_aborted"],
      [["failed", "abc"], "failed", v2 ? 199 : 1, v2 ? "unknown" : "shell"],
      [["failed", "300"], "failed", 255, "dependency"],
      [["failed", "137"], "failed", 137, "resource"],
      [["aborted"], "aborted", v2 ? 199 : 130, "user_aborted"],
      [["aborted", "0"], "aborted", 0, "user_aborted"],
      [["whatever"], "unknown", v2 ? 199 : 0, "unknown"],
      ...[113, 114, 122, 253, 254].map((code): [string[], string, number, string] => [
        ["failed", String(code)],
        v2 ? "aborted" : "failed",
        code,
        v2 ? "user_aborted" : "unknown",
      ]),
      [["failed", "none"], "failed", v2 ? 0 : 1, v2 ? "unknown" : "shell"],
    ];
    for (const [args] of cases) await tm(p, ["final", ...args]);
    const got = parsed().map((b) => [b.status, b.exit_code, b.error_category]);
    expect(got).toEqual(cases.map(([, s, c, cat]) => [s, c, cat]));
    const errors = parsed().map((b) => b.error);
    expect(errors[0]).toBe("");
    expect(errors[3]).toBe("exit_code=129 | Hangup (SIGHUP): terminal closed");
    expect(errors[9]).toBe("exit_code=0 | Unknown error");
    expect(errors[10]).toBe(
      v2 ? "exit_code=199 | Engine: no exit code was passed to the report" : "exit_code=0 | Unknown error",
    );
    // An abort carries the header only, a failure the header (and the log when there is one).
    expect(errors[15]).toStartWith("exit_code=254 | App: the user declined the prompt (or it timed out)");
  });
});

// ------------------------------------------------------------------ values and defaults
describe("field values", () => {
  test("defaults with an empty environment", async () => {
    await tm("v1", ["start"]);
    await tm("v2", ["start"]);
    const [v1, v2] = parsed();
    const common = {
      type: "lxc",
      nsapp: "debian",
      ct_type: 1,
      disk_size: 8,
      core_count: 1,
      ram_size: 512,
      os_type: "debian",
      os_version: "12",
      method: "default",
      cpu_vendor: "unknown",
      cpu_model: "",
      gpu_vendor: "unknown",
      gpu_model: "",
      ram_speed: "",
      platform: "pve",
    };
    expect(v1).toMatchObject({
      ...common,
      gpu_passthrough: "unknown",
      repo_source: "ProxmoxVE",
      repo_slug: "community-scripts/ProxmoxVE",
    });
    expect(v2).toMatchObject({
      ...common,
      gpu_passthrough: "no",
      repo_source: "ProxmoxVED",
      repo_slug: "community-scripts/ProxmoxVED",
    });
    const uname = Bun.spawnSync(["uname", "-r"]).stdout.toString().trim();
    expect(v2!.kernel_version).toBe(uname);
    expect(v1!.random_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(v1!.execution_id).toBe(v1!.random_id);
    expect(v1!.random_id).not.toBe(v2!.random_id);
  });

  test("env read as the real client reads it", async () => {
    const env = {
      NSAPP: "",
      app: "fromapp",
      DISK_SIZE: "32G",
      CORE_COUNT: "",
      RAM_SIZE: "",
      METHOD: "",
      CT_TYPE: "0",
      TELEMETRY_TYPE: "turnkey",
      EXECUTION_ID: "exec-1",
      RANDOM_UUID: "rid-1",
      REPO_SOURCE: "external",
      REPO_SLUG: "me/fork",
      TELEMETRY_PLATFORM: "incus",
      PVEVERSION: "",
      HAS_ARM: "true",
      ENABLE_GPU: "yes",
      var_appversion: "1.2.3",
    };
    await tm("v2", ["start"], env);
    expect(parsed()[0]).toMatchObject({
      random_id: "rid-1",
      execution_id: "exec-1",
      type: "turnkey",
      nsapp: "fromapp",
      ct_type: 0,
      disk_size: 32,
      core_count: 0,
      ram_size: 0,
      method: "default",
      pve_version: "",
      repo_source: "external",
      repo_slug: "me/fork",
      platform: "incus",
      has_arm: true,
      gpu_passthrough: "yes",
      app_version: "1.2.3",
    });
    captured = [];
    await tm("v1", ["start"], { NSAPP: "", DISK_SIZE: "lots", REPO_SOURCE: "external", GPU_PASSTHROUGH: "dgpu" });
    expect(parsed()[0]).toMatchObject({
      nsapp: "unknown",
      disk_size: 0,
      repo_source: "external",
      repo_slug: "",
      gpu_passthrough: "dgpu",
    });
  });

  test("options for the fields", async () => {
    const args = [
      ...[
        "--id",
        "r",
        "--execution-id",
        "e",
        "--app",
        "immich",
        "--os",
        "ubuntu",
        "--os-version",
        "24.04",
        "--pve",
        "9.0.3",
      ],
      ...["--disk", "20G", "--cores", "4", "--ram", "4096", "--method", "advanced", "--type", "lxc", "--ct-type", "0"],
      ...[
        "--cpu-vendor",
        "amd",
        "--cpu-model",
        "EPYC",
        "--gpu-vendor",
        "nvidia",
        "--gpu-model",
        "RTX",
        "--gpu-passthrough",
        "dgpu",
      ],
      ...[
        "--ram-speed",
        "5600",
        "--arch",
        "arm64",
        "--has-arm",
        "true",
        "--platform",
        "pve",
        "--kernel",
        "6.14.8-2-pve",
      ],
      ...["--app-version", "v1.2", "--repo-source", "ProxmoxVE", "--repo-slug", "community-scripts/ProxmoxVE"],
      "start",
    ];
    await tm("v2", args);
    expect(parsed()[0]).toMatchObject({
      random_id: "r",
      execution_id: "e",
      nsapp: "immich",
      os_type: "ubuntu",
      os_version: "24.04",
      pve_version: "9.0.3",
      disk_size: 20,
      core_count: 4,
      ram_size: 4096,
      method: "advanced",
      ct_type: 0,
      cpu_vendor: "amd",
      cpu_model: "EPYC",
      gpu_vendor: "nvidia",
      gpu_model: "RTX",
      gpu_passthrough: "dgpu",
      ram_speed: "5600",
      arch: "arm64",
      has_arm: true,
      kernel_version: "6.14.8-2-pve",
      app_version: "v1.2",
      repo_source: "ProxmoxVE",
      repo_slug: "community-scripts/ProxmoxVE",
    });
  });

  test("arch: v2 normalises uname -m (aarch64 -> arm64), v1 sends it raw; has_arm follows", async () => {
    await tm("v2", ["start"], {}, armPath);
    await tm("v1", ["start"], {}, armPath);
    const [v2, v1] = parsed();
    expect([v2!.arch, v2!.has_arm, v2!.kernel_version]).toEqual(["arm64", true, "6.8.0-arm"]);
    expect([v1!.arch, v1!.has_arm]).toEqual(["aarch64", true]);
  });

  test("install_duration: final clamped to 86400, tool/addon not; the timer via INSTALL_START_TIME", async () => {
    await tm("v2", ["--duration", "100000", "final", "success"]);
    await tm("v2", ["--duration", "100000", "tool", "x"]);
    await tm("v1", ["final", "success"], { INSTALL_START_TIME: String(Math.floor(Date.now() / 1000) - 100) });
    await tm("v1", ["final", "success"], { INSTALL_START_TIME: "1" });
    await tm("v1", ["progress", "configuring"]);
    const d = parsed().map((b) => b.install_duration as number);
    expect(d[0]).toBe(86400);
    expect(d[1]).toBe(100000);
    expect(d[2]).toBeGreaterThanOrEqual(100);
    expect(d[2]).toBeLessThanOrEqual(102);
    expect(d[3]).toBe(86400);
    expect(d[4]).toBe(0);
  });

  test("error text: header forms, category override, failed_line sanitised, tool exit not clamped", async () => {
    await tm("v2", ["--failed-command", "make -j4", "final", "failed", "2"]);
    await tm("v2", ["--failed-command", "make", "--failed-line", "x9", "final", "failed", "127"], {
      ERROR_CATEGORY_OVERRIDE: "network",
    });
    await tm("v2", ["final", "aborted", "130"], { ERROR_CATEGORY_OVERRIDE: "network" });
    await tm("v2", ["tool", "t", "failed", "300"]);
    await tm("v2", ["tool", "t", "failed"]);
    const [a, b, c, t, u] = parsed();
    expect([a!.error, a!.error_category, a!.failed_command, a!.failed_line]).toEqual([
      "exit_code=2 | Shell syntax error or builtin misuse | command: make -j4",
      "shell",
      "make -j4",
      0,
    ]);
    expect([b!.error, b!.error_category, b!.failed_line]).toEqual([
      "exit_code=127 | Command not found | command: make",
      "network",
      0,
    ]);
    // v2: the engine's abort branch keeps an ERROR_CATEGORY_OVERRIDE already set
    expect(c!.error_category).toBe("network");
    expect([t!.exit_code, t!.error_category]).toEqual([300, "unknown"]);
    expect([u!.exit_code, u!.error_category, u!.error]).toEqual([1, "shell", "exit_code=1 | General error"]);
  });

  test("strings the client does not escape stay raw (a quote in nsapp breaks the JSON)", async () => {
    await tm("v2", ["--app", 'my"app', "start"]);
    expect(bodies()[0]).toContain('    "nsapp": "my"app",\n');
    expect(() => JSON.parse(bodies()[0]!)).toThrow();
  });
});

// ------------------------------------------------------------------ escaping, with and without jq
const NASTY =
  'say "hi" to C:\\temp\\new\ttab\nsecond line: ümlaut, 日本語, 🎉\n\x1b[31mred\x1b[0m CR\r\n\x01bell\x07 end\\';
const CLEANED = 'say "hi" to C:\\temp\\new\ttab\nsecond line: ümlaut, 日本語, 🎉\nred CR\nbell end\\';

describe("escaping: jq, --no-jq, CLIENT_NO_JQ=1 and a PATH without jq give the same valid JSON", () => {
  const modes: [string, string[], Record<string, string>, () => string][] = [
    ["jq", [], {}, () => FULL_PATH],
    ["--no-jq", ["--no-jq"], {}, () => FULL_PATH],
    ["CLIENT_NO_JQ=1", [], { CLIENT_NO_JQ: "1" }, () => FULL_PATH],
    ["no jq on PATH", [], {}, () => noJqPath],
  ];

  for (const p of ["v1", "v2"] as const) {
    test(`${p}: error with quotes, backslashes, tabs, newlines, non-ASCII, ANSI, CR, control bytes`, async () => {
      const env = {
        CPU_MODEL: 'Intel(R) "Xeon" \\ E5',
        GPU_MODEL: "Matrox\tG200 ✓",
        KERNEL_VERSION: '6.8"x',
        APPLICATION_VERSION: "v\\1",
        FAILED_COMMAND: 'echo "a\\b"\tc',
        FAILED_LINE: "12",
      };
      const seen: string[] = [];
      for (const [, flags, extra, path] of modes) {
        captured = [];
        const r = await tm(
          p,
          ["-v", ...flags, ...ARCH, "--id", "x", "--duration", "1", "final", "failed", "1", NASTY],
          { ...env, ...extra },
          path(),
        );
        expect(r.code).toBe(0);
        expect(r.stderr).toContain(
          `escaping with ${flags.length || extra.CLIENT_NO_JQ || path() !== FULL_PATH ? "awk" : "jq"}`,
        );
        const body = bodies()[0]!;
        const obj = JSON.parse(body) as Body;
        expect(body).toBe(heredoc(obj));
        expect(obj.error).toBe(CLEANED);
        expect(obj.cpu_model).toBe(env.CPU_MODEL);
        expect(obj.gpu_model).toBe(env.GPU_MODEL);
        if (p === "v2") {
          expect([obj.kernel_version, obj.app_version, obj.failed_command, obj.failed_line]).toEqual([
            env.KERNEL_VERSION,
            env.APPLICATION_VERSION,
            env.FAILED_COMMAND,
            12,
          ]);
        }
        seen.push(body);
      }
      expect(new Set(seen).size).toBe(1);
    });
  }

  test("edge strings: trailing newlines, only a newline, lone backslash, empty", async () => {
    for (const s of ["ends with newline\n\n", "\n", "\\", '"', "a\n\nb"]) {
      const seen: string[] = [];
      for (const [, flags, extra, path] of modes) {
        captured = [];
        await tm("v2", [...flags, "--id", "x", "final", "failed", "1", s], extra, path());
        expect((JSON.parse(bodies()[0]!) as Body).error).toBe(s);
        seen.push(bodies()[0]!);
      }
      expect(new Set(seen).size).toBe(1);
    }
  });

  test("--log: noise and blank lines dropped, CR and colours cleaned, last 60 lines, 10240 bytes", async () => {
    const lines: string[] = [];
    for (let i = 1; i <= 100; i++) lines.push(`line ${i} "q" \\ \x1b[1mbold\x1b[0m\r`);
    const noisy = [
      "Get:1 http://deb.debian.org/debian trixie InRelease [140 kB]",
      "Reading package lists...",
      "",
      "   ",
      "Unpacking foo (1.0) ...",
      "45% [Working]",
      ...lines,
      "Processing triggers for man-db (2.11.2-2) ...",
    ];
    const log = join(tmp, "noisy.log");
    writeFileSync(log, noisy.join("\n") + "\n");
    for (const [, flags, extra, path] of modes) {
      captured = [];
      await tm("v1", [...flags, "--log", log, "final", "failed", "1"], extra, path());
      const err = (JSON.parse(bodies()[0]!) as Body).error as string;
      const [head, out] = err.split("\n---\n");
      expect(head).toBe("exit_code=1 | General error");
      const got = out!.split("\n");
      expect(got).toHaveLength(60);
      expect(got[0]).toBe('line 41 "q" \\ bold');
      expect(got[59]).toBe('line 100 "q" \\ bold');
    }
    const big = join(tmp, "big.log");
    writeFileSync(
      big,
      Array.from({ length: 30 }, (_, i) => `${String(i + 1).padStart(3, "0")}${"x".repeat(997)}`).join("\n"),
    );
    captured = [];
    await tm("v2", ["--log", big, "final", "failed", "1"]);
    const out = ((JSON.parse(bodies()[0]!) as Body).error as string).split("\n---\n")[1]!;
    expect(out.split("\n").map((l) => l.slice(0, 3))).toEqual([
      "021",
      "022",
      "023",
      "024",
      "025",
      "026",
      "027",
      "028",
      "029",
      "030",
    ]);
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(10240);
  });

  test("--log-lines N: generated output, capped at 60 lines", async () => {
    await tm("v2", ["--app", "immich", "--log-lines", "5", "final", "failed", "1"]);
    await tm("v2", ["--log-lines", "500", "--no-jq", "final", "failed", "1"]);
    const [five, many] = parsed().map((b) => (b.error as string).split("\n---\n")[1]!.split("\n"));
    expect(five).toHaveLength(5);
    expect(five![4]).toStartWith("E: immich:");
    expect(many).toHaveLength(60);
  });
});

// ------------------------------------------------------------------ the whole run
describe("install lifecycle", () => {
  test("v2: start, validation, configuring, 4 container pings, success; one execution", async () => {
    const r = await tm("v2", ["install"]);
    expect(r.code).toBe(0);
    const order = [
      "installing",
      "validation",
      "configuring",
      "configuring",
      "configuring",
      "configuring",
      "configuring",
      "success",
    ];
    expect(statuses()).toEqual(order);
    expect(r.stdout).toBe(order.map((s) => `telemetry ${s} 202\n`).join(""));
    const shapes = captured.map((c) => Object.keys(JSON.parse(c.body) as Body));
    expect(shapes).toEqual([KEYS.v2, KEYS.v2, KEYS.v2, ...Array(4).fill(PING_KEYS.v2), KEYS.v2]);
    const ids = new Set(parsed().map((b) => `${b.random_id}/${b.execution_id}`));
    expect(ids.size).toBe(1);
    expect(
      captured.every((c) => c.headers["user-agent"] === "community-scripts-core/2" && c.path === "/telemetry"),
    ).toBe(true);
    // The timer starts with the first report: 0 s, or 1 if a second boundary fell between the two.
    expect(parsed()[0]!.install_duration).toBeLessThanOrEqual(1);
  });

  test("v1: the same order with v1 shapes, curl's UA; --pings 2", async () => {
    await tm("v1", ["--pings", "2", "install", "failed", "100"]);
    expect(statuses()).toEqual(["installing", "validation", "configuring", "configuring", "configuring", "failed"]);
    const shapes = captured.map((c) => Object.keys(JSON.parse(c.body) as Body));
    expect(shapes).toEqual([KEYS.v1, KEYS.v1, KEYS.v1, PING_KEYS.v1, PING_KEYS.v1, KEYS.v1]);
    expect(captured.every((c) => c.headers["user-agent"]!.startsWith("curl/"))).toBe(true);
    expect(parsed()[5]).toMatchObject({ exit_code: 100, error_category: "dependency" });
  });

  test("--vm: start and final only, type vm, ct_type 2", async () => {
    await tm("v2", ["--vm", "install", "aborted"]);
    expect(statuses()).toEqual(["installing", "aborted"]);
    expect(parsed().map((b) => [b.type, b.ct_type])).toEqual([
      ["vm", 2],
      ["vm", 2],
    ]);
  });

  test("install failed with command, line and log; failed 143 -> aborted", async () => {
    await tm("v2", [
      "--pings",
      "0",
      "--failed-command",
      "npm ci",
      "--failed-line",
      "7",
      "--log-lines",
      "3",
      "install",
      "failed",
      "1",
    ]);
    const final = parsed().at(-1)!;
    expect(final).toMatchObject({ status: "failed", exit_code: 1, failed_command: "npm ci", failed_line: 7 });
    expect(final.error as string).toStartWith("exit_code=1 | General error | at line 7: npm ci\n---\n");
    captured = [];
    await tm("v1", ["--pings", "0", "install", "failed", "143"]);
    expect(parsed().at(-1)).toMatchObject({
      status: "aborted",
      exit_code: 143,
      error: "exit_code=143 | Terminated (SIGTERM)",
    });
  });

  test("--retries 2: failed attempts, then a new execution_id (same random_id) per attempt", async () => {
    const r = await tm("v2", ["--pings", "1", "--retries", "2", "--id", "rid", "install", "success"]);
    expect(r.code).toBe(0);
    const one = ["installing", "validation", "configuring", "configuring"];
    expect(statuses()).toEqual([...one, "failed", ...one, "failed", ...one, "success"]);
    const b = parsed();
    expect(new Set(b.map((x) => x.random_id))).toEqual(new Set(["rid"]));
    const execs = [b[0]!.execution_id, b[5]!.execution_id, b[10]!.execution_id] as string[];
    expect(execs[0]).toBe("rid");
    expect(new Set(execs).size).toBe(3);
    expect(execs[1]).toMatch(/^[0-9a-f-]{36}$/);
    for (let i = 0; i < b.length; i++) expect(b[i]!.execution_id).toBe(execs[Math.floor(i / 5)]!);
    expect(b[4]).toMatchObject({ exit_code: 1, error: "exit_code=1 | General error", error_category: "shell" });
  });

  test("--retries with failed EXIT_CODE: earlier attempts fail the same way; aborted ones fail with 1", async () => {
    await tm("v1", ["--pings", "0", "--retries", "1", "install", "failed", "100"]);
    expect(
      parsed()
        .filter((b) => b.status !== "installing" && b.status !== "validation" && b.status !== "configuring")
        .map((b) => [b.status, b.exit_code]),
    ).toEqual([
      ["failed", 100],
      ["failed", 100],
    ]);
    captured = [];
    await tm("v1", ["--vm", "--retries", "1", "install", "failed", "130"]);
    expect(parsed().map((b) => [b.status, b.exit_code])).toEqual([
      ["installing", 0],
      ["failed", 1],
      ["installing", 0],
      ["aborted", 130],
    ]);
  });

  test("SIGTERM during --sleep: the final goes out as aborted 143, the run ends", async () => {
    const proc = Bun.spawn([BASH, SCRIPT, "--protocol", "v2", "--pings", "1", "--sleep", "20", "install"], {
      env: { PATH: FULL_PATH, INSTALLSTATS_URL: base },
      stdout: "pipe",
      stderr: "pipe",
    });
    const t0 = Date.now();
    while (captured.length < 4 && Date.now() - t0 < 10_000) await Bun.sleep(20);
    await Bun.sleep(100);
    proc.kill("SIGTERM");
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(code).toBe(0);
    expect(statuses()).toEqual(["installing", "validation", "configuring", "configuring", "aborted"]);
    expect(stdout.trim().split("\n").at(-1)).toBe("telemetry aborted 202");
    expect(parsed()[4]).toMatchObject({
      exit_code: 143,
      error: "exit_code=143 | Terminated (SIGTERM)",
      error_category: "user_aborted",
    });
  });
});

// ------------------------------------------------------------------ transport
describe("retries and transport", () => {
  test("everything answered 500: start 3x, progress/ping 1x, final 2x full + 2x short error", async () => {
    respond = () => new Response("boom", { status: 500 });
    const cmd = `apt-get install -y "${"p".repeat(250)}"`;
    const r = await tm("v2", [
      "--pings",
      "1",
      "--failed-command",
      cmd,
      "--failed-line",
      "9",
      "--log-lines",
      "5",
      "install",
      "failed",
      "100",
    ]);
    expect(r.code).toBe(0);
    expect(statuses()).toEqual([
      "installing",
      "installing",
      "installing",
      "validation",
      "configuring",
      "configuring",
      "failed",
      "failed",
      "failed",
      "failed",
    ]);
    expect(
      r.stdout
        .trim()
        .split("\n")
        .every((l) => l.endsWith(" 500")),
    ).toBe(true);
    expect(r.stdout.trim().split("\n")).toHaveLength(10);
    const finals = parsed().slice(6);
    const expl = "APT: package manager error (broken or unmet dependencies)";
    for (const f of finals.slice(0, 2)) {
      expect(f.error as string).toStartWith(`exit_code=100 | ${expl} | at line 9: ${cmd}\n---\n`);
    }
    const short = `exit_code=100 | ${expl} | at line 9: ${Buffer.from(cmd).subarray(0, 200).toString()}`;
    expect(finals.slice(2).map((f) => f.error)).toEqual([short, short]);
    // only the error changes; ids and everything else stay
    const strip = (b: Body) => ({ ...b, error: "" });
    expect(new Set(finals.map((f) => JSON.stringify(strip(f)))).size).toBe(1);
    expect(new Set(parsed().map((b) => `${b.random_id}/${b.execution_id}`)).size).toBe(1);
  });

  test("a successful final has no error text: 2 attempts only; tool/addon/ping/progress once", async () => {
    respond = () => new Response("", { status: 503 });
    await tm("v1", ["final", "success"]);
    await tm("v1", ["tool", "x", "failed"]);
    await tm("v1", ["addon", "y"]);
    await tm("v1", ["ping"]);
    await tm("v1", ["progress", "validation"]);
    expect(statuses()).toEqual(["success", "success", "failed", "success", "configuring", "validation"]);
  });

  test("start stops at the first 2xx; the short-error pair stops at its first 2xx", async () => {
    respond = (n) => new Response("", { status: n < 2 ? 500 : 202 });
    const r = await tm("v2", ["start"]);
    expect(r.stdout).toBe("telemetry installing 500\ntelemetry installing 500\ntelemetry installing 202\n");
    captured = [];
    const r2 = await tm("v2", ["final", "failed", "1"]);
    expect(r2.stdout).toBe("telemetry failed 500\ntelemetry failed 500\ntelemetry failed 202\n");
  });

  test("redirects are not followed: a 308 is a failed attempt", async () => {
    respond = () => new Response("", { status: 308, headers: { location: "/elsewhere" } });
    const r = await tm("v1", ["start"]);
    expect(r.stdout).toBe("telemetry installing 308\n".repeat(3));
    expect(captured.map((c) => c.path)).toEqual(["/telemetry", "/telemetry", "/telemetry"]);
  });

  test("--retry-sleep: the pause between attempts (default 1 s)", async () => {
    respond = () => new Response("", { status: 500 });
    const t0 = Date.now();
    await run(["--protocol", "v2", "--retry-sleep", "0.3", "start"]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(550);
    expect(captured).toHaveLength(3);
  });

  test("TELEMETRY_URL is the full URL and wins over --url; else BASE/telemetry", async () => {
    const r = await tm("v2", ["--url", "http://127.0.0.1:1", "ping"], { TELEMETRY_URL: `${base}/custom/ingest` });
    expect(r.stdout).toBe("telemetry configuring 202\n");
    await tm("v1", ["--url", `${base}/`, "ping"]);
    await tm("v1", ["ping"], { TELEMETRY_URL: "" });
    expect(captured.map((c) => c.path)).toEqual(["/custom/ingest", "/telemetry", "/telemetry"]);
  });

  test("unreachable: 000 per attempt, exit 1", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const port = closed.port;
    closed.stop(true);
    const r = await tm("v2", ["--url", `http://127.0.0.1:${port}`, "start"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("telemetry installing 000\n".repeat(3));
    const p = await tm("v1", ["ping"], { TELEMETRY_URL: `http://127.0.0.1:${port}/telemetry` });
    expect([p.code, p.stdout]).toEqual([1, "telemetry configuring 000\n"]);
  });
});

// ------------------------------------------------------------------ ids, opt-out, usage
describe("ids, opt-out and usage", () => {
  test("tool/addon: a fresh id per run for both ids; RANDOM_UUID/EXECUTION_ID unused; --id sets both", async () => {
    const env = { RANDOM_UUID: "rid", EXECUTION_ID: "eid" };
    await tm("v2", ["tool", "a"], env);
    await tm("v2", ["tool", "a"], env);
    await tm("v1", ["addon", "b"], env);
    await tm("v1", ["--id", "", "addon", "b"], env);
    await tm("v1", ["--id", "mine", "tool", "c"], env);
    const ids = parsed().map((b) => [b.random_id, b.execution_id] as string[]);
    for (const [r, e] of ids.slice(0, 4)) {
      expect(r).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(e).toBe(r!);
    }
    expect(new Set(ids.slice(0, 4).map(([r]) => r)).size).toBe(4);
    expect(ids[4]).toEqual(["mine", "mine"]);
  });

  test("v2 tool type from TELEMETRY_TOOL_TYPE; v1 always pve", async () => {
    await tm("v2", ["tool", "a"], { TELEMETRY_TOOL_TYPE: "tool" });
    await tm("v1", ["tool", "a"], { TELEMETRY_TOOL_TYPE: "tool" });
    expect(parsed().map((b) => b.type)).toEqual(["tool", "pve"]);
  });

  test("an empty random_id sends nothing (the client's gate)", async () => {
    const r = await tm("v2", ["--id", "", "install"]);
    const s = await tm("v1", ["final", "failed"], { RANDOM_UUID: "" });
    expect([r.code, r.stdout, s.code, s.stdout]).toEqual([0, "", 0, ""]);
    expect(captured).toHaveLength(0);
  });

  test("DIAGNOSTICS=no sends nothing and prints nothing, for every command", async () => {
    for (const p of ["v1", "v2"]) {
      for (const args of [
        ["start"],
        ["progress", "validation"],
        ["ping"],
        ["final", "failed", "1"],
        ["install"],
        ["tool", "t"],
        ["addon", "a"],
      ]) {
        const r = await run(["--protocol", p, ...args], { DIAGNOSTICS: "no", TELEMETRY_URL: `${base}/telemetry` });
        expect({ args, ...r }).toEqual({ args, code: 0, stdout: "", stderr: "" });
      }
    }
    expect(captured).toHaveLength(0);
  });

  test("usage errors exit 2 and send nothing", async () => {
    for (const args of [
      ["--protocol", "v3", "start"],
      ["--protocol"],
      ["ping"],
      ["final", "success"],
      ["tool", "x"],
      ["--pings", "2", "install"],
      ["--no-jq", "start"],
      ["--protocol", "v2", "update"],
      ["--protocol", "v2", "--legacy", "start"],
      ["--protocol", "v1", "--host-version", "start"],
      ["--protocol", "v2", "start", "x"],
      ["--protocol", "v2", "progress"],
      ["--protocol", "v2", "final"],
      ["--protocol", "v2", "final", "failed", "1", "e", "x"],
      ["--protocol", "v2", "install", "done", "0", "e", "x"],
      ["--protocol", "v2", "install", "maybe"],
      ["--protocol", "v2", "tool"],
      ["--protocol", "v2", "tool", "x", "aborted"],
      ["--protocol", "v2", "--pings", "x", "install"],
      ["--protocol", "v2", "--retries", "-1", "install"],
      ["--protocol", "v2", "--retry-sleep", "soon", "start"],
      ["--protocol", "v2", "--duration", "1h", "final", "success"],
      ["--protocol", "v2", "--log", "/nonexistent/x.log", "final", "failed"],
      ["--protocol", "v2", "--log", "/etc/hostname", "--log-lines", "3", "final", "failed"],
      ["--protocol", "v2", "--sleep", "soon", "install"],
    ]) {
      const r = await run(args);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
    }
    expect(captured).toHaveLength(0);
  });

  test("--help documents the protocols, commands and output format", async () => {
    const h = await run(["--help"]);
    expect(h.code).toBe(0);
    for (const s of [
      "--protocol",
      "progress STATUS",
      "final STATUS",
      "--retries",
      "--pings",
      "--no-jq",
      "TELEMETRY_URL",
      "telemetry <status> <http_code>",
    ]) {
      expect(h.stdout).toContain(s);
    }
  });
});

// ------------------------------------------------------------------ the newest engine (core after a495a11)
describe("v2: the newest engine's endings", () => {
  test("no final report for a run that never attempted its start (an update run)", async () => {
    const r = await tm("v2", ["-v", "final", "failed", "100"], { POST_TO_API_DONE: "" });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect(captured).toHaveLength(0);
    expect(r.stderr).toContain("POST_TO_API_DONE unset");
    // v1 (ProxmoxVE misc/api.func) sends it anyway: the server holds it until a start comes
    await tm("v1", ["final", "failed", "100"]);
    expect(statuses()).toEqual(["failed"]);
  });

  test("a start that was attempted but not accepted still gets its final report", async () => {
    await tm("v2", ["final", "failed", "100"], { POST_TO_API_DONE: "false" });
    expect(statuses()).toEqual(["failed"]);
  });

  test("install: the start sets the guard; a start answered 500 three times still reports the ending", async () => {
    respond = (n) => new Response("", { status: n < 3 ? 500 : 202 });
    const r = await tm("v2", ["--pings", "0", "install", "failed", "254"], { POST_TO_API_DONE: "" });
    expect(r.stdout.trim().split("\n")).toEqual([
      "telemetry installing 500",
      "telemetry installing 500",
      "telemetry installing 500",
      "telemetry validation 202",
      "telemetry configuring 202",
      "telemetry aborted 202",
    ]);
    expect(parsed().at(-1)).toMatchObject({
      status: "aborted",
      exit_code: 254,
      error_category: "user_aborted",
      error: "exit_code=254 | App: the user declined the prompt (or it timed out)",
      repo_source: "ProxmoxVED",
    });
  });

  test("retries before a decline fail with 1; the decline itself is the last attempt's abort", async () => {
    await tm("v2", ["--pings", "0", "--retries", "1", "install", "failed", "113"], { POST_TO_API_DONE: "" });
    const finals = parsed().filter((b) => !["installing", "validation", "configuring"].includes(b.status as string));
    expect(finals.map((b) => [b.status, b.exit_code, b.error_category])).toEqual([
      ["failed", 1, "shell"],
      ["aborted", 113, "user_aborted"],
    ]);
    expect(finals[0]!.execution_id).not.toBe(finals[1]!.execution_id);
  });
});
