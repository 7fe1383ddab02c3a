import { describe, expect, test } from "bun:test";
import { defaults } from "../../src/config.ts";
import { normalizeStart, normalizeUpdate, type Checked, type NormalizeOptions } from "../../src/domain/normalize.ts";
import type { JsonObject } from "../../src/domain/json.ts";
import { INSTALL_TYPES, MAX_RANDOM_ID_LENGTH, type Descriptive, type Report } from "../../src/domain/execution.ts";

// /upload's two reports, as this file checks them: the fields the old clients send. What the
// current clients add (telemetry's fields, exit codes, categories) is in test/unit/telemetry-v1-v2-field-rules.test.ts.
const UPLOAD_FIELDS = [
  "type",
  "ctType",
  "diskSize",
  "coreCount",
  "ramSize",
  "osType",
  "osVersion",
  "disableip6",
  "nsapp",
  "method",
  "pveVersion",
] as const;
type StartReport = Pick<Descriptive, (typeof UPLOAD_FIELDS)[number] | "extra"> & {
  randomId: string;
  status: string;
  outcome: Report["outcome"];
  error: string | null;
};
type StatusUpdate = { randomId: string; status: string; outcome: Report["outcome"]; error: string | null };

/** A report of /upload: no payload version, its execution is its install, and only the old fields set. */
function startView(c: Checked<Report>): { ok: true; value: StartReport } | Checked<Report> {
  if (!c.ok) return c;
  const r = c.value;
  expect({ executionId: r.executionId, payloadVersion: r.payloadVersion }).toEqual({
    executionId: r.randomId,
    payloadVersion: null,
  });
  expect(r.fields).not.toBeNull();
  const fields = r.fields!;
  // The current clients' fields are not /upload's: never set from an /upload body.
  for (const [key, value] of Object.entries(fields))
    if (key !== "extra" && !(UPLOAD_FIELDS as readonly string[]).includes(key))
      expect({ key, value }).toEqual({ key, value: null });
  expect({ exitCode: r.exitCode, failedCommand: r.failedCommand, installDuration: r.installDuration }).toEqual({
    exitCode: null,
    failedCommand: null,
    installDuration: null,
  });
  const view = Object.fromEntries(UPLOAD_FIELDS.map((k) => [k, fields[k]])) as Pick<
    Descriptive,
    (typeof UPLOAD_FIELDS)[number]
  >;
  return {
    ok: true,
    value: { randomId: r.randomId, ...view, extra: fields.extra, status: r.status, outcome: r.outcome, error: r.error },
  };
}

/** A status update carries no descriptive fields. */
function updateView(c: Checked<Report>): { ok: true; value: StatusUpdate } | Checked<Report> {
  if (!c.ok) return c;
  const r = c.value;
  expect({ fields: r.fields, executionId: r.executionId, payloadVersion: r.payloadVersion }).toEqual({
    fields: null,
    executionId: r.randomId,
    payloadVersion: null,
  });
  return { ok: true, value: { randomId: r.randomId, status: r.status, outcome: r.outcome, error: r.error } };
}

const OPTS: NormalizeOptions = {
  maxFieldLength: defaults.maxFieldLength,
  maxErrorLength: defaults.maxErrorLength,
  maskIps: defaults.maskIps,
};
const ID = "3f2b9c1e-8d4a-4f6b-9a7e-2c5d1e0f9a8b";

// ---------------------------------------------------------------- realistic bodies
// What the parsed body of each client revision looks like (scripts/client.sh, misc/api.func).

/** Container client, newer revision (sends disableip6). */
const LXC_BODY: JsonObject = {
  ct_type: 1,
  type: "lxc",
  disk_size: 8,
  core_count: 2,
  ram_size: 2048,
  os_type: "debian",
  os_version: "12",
  disableip6: "no",
  nsapp: "homeassistant",
  method: "default",
  pve_version: "8.2.2",
  status: "installing",
  random_id: ID,
};

const LXC_RECORD: StartReport = {
  randomId: ID,
  type: "lxc",
  ctType: 1,
  diskSize: 8,
  coreCount: 2,
  ramSize: 2048,
  osType: "debian",
  osVersion: "12",
  disableip6: "no",
  nsapp: "homeassistant",
  method: "default",
  pveVersion: "8.2.2",
  extra: null,
  status: "installing",
  outcome: "in_progress",
  error: null,
};

/** VM client: ct_type 2, disableip6 "" (kept: "" and absent stay distinct), disk_size with its G stripped. */
const VM_BODY: JsonObject = {
  ct_type: 2,
  type: "vm",
  disk_size: 32,
  core_count: 4,
  ram_size: 4096,
  os_type: "ubuntu",
  os_version: "24.04",
  disableip6: "",
  nsapp: "ubuntu2404-vm",
  method: "advanced",
  pve_version: "8.3.0",
  status: "installing",
  random_id: ID,
};

const VM_RECORD: StartReport = {
  randomId: ID,
  type: "vm",
  ctType: 2,
  diskSize: 32,
  coreCount: 4,
  ramSize: 4096,
  osType: "ubuntu",
  osVersion: "24.04",
  disableip6: "",
  nsapp: "ubuntu2404-vm",
  method: "advanced",
  pveVersion: "8.3.0",
  extra: null,
  status: "installing",
  outcome: "in_progress",
  error: null,
};

/** What `{"type": "lxc", "random_id": ID}` normalizes to. */
const MINIMAL_RECORD: StartReport = {
  ...LXC_RECORD,
  ctType: null,
  diskSize: null,
  coreCount: null,
  ramSize: null,
  osType: null,
  osVersion: null,
  disableip6: null,
  nsapp: null,
  method: null,
  pveVersion: null,
};

function without(body: JsonObject, ...keys: string[]): JsonObject {
  const copy = { ...body };
  for (const key of keys) delete copy[key];
  return copy;
}

// ---------------------------------------------------------------- assertion helpers

function expectStart(body: JsonObject, record: StartReport, opts: NormalizeOptions = OPTS): void {
  expect(startView(normalizeStart(body, opts))).toStrictEqual({ ok: true, value: record });
}

function expectUpdate(body: JsonObject, update: StatusUpdate, opts: NormalizeOptions = OPTS): void {
  expect(updateView(normalizeUpdate(body, opts))).toStrictEqual({ ok: true, value: update });
}

/** The result names exactly this field, and the message names it too. */
function expectInvalid(
  result: ReturnType<typeof normalizeStart | typeof normalizeUpdate>,
  field: string,
  message: RegExp | null,
): void {
  expect(result).toStrictEqual({ ok: false, field, message: expect.any(String) });
  if (result.ok) return;
  expect(result.message).toContain(field);
  if (message) expect(result.message).toMatch(message);
}

type InvalidCase = [name: string, body: JsonObject, field: string, message?: RegExp];

/** Rows of one length (test.each passes a done callback for missing trailing values). */
const rows = (cases: InvalidCase[]) =>
  cases.map(([name, body, field, message]) => [`${name} -> ${field}`, body, field, message ?? null] as const);

// ================================================================ normalizeStart

describe("constants", () => {
  test("install types and the random_id cap", async () => {
    expect([...INSTALL_TYPES]).toEqual(["lxc", "vm", "turnkey", "pve", "addon", "tool"]);
    expect(MAX_RANDOM_ID_LENGTH).toBe(128);
  });
});

describe("normalizeStart: bodies real clients send", () => {
  const cases: [string, JsonObject, StartReport][] = [
    ["container client with disableip6", LXC_BODY, LXC_RECORD],
    [
      "legacy container client without disableip6",
      without(LXC_BODY, "disableip6"),
      { ...LXC_RECORD, disableip6: null },
    ],
    ["container client, disableip6 yes", { ...LXC_BODY, disableip6: "yes" }, { ...LXC_RECORD, disableip6: "yes" }],
    ["VM client (disableip6 empty)", VM_BODY, VM_RECORD],
    [
      'pve_version "not found" is kept as sent',
      { ...LXC_BODY, pve_version: "not found" },
      { ...LXC_RECORD, pveVersion: "not found" },
    ],
    ["pve 9 host", { ...LXC_BODY, pve_version: "9.0.3" }, { ...LXC_RECORD, pveVersion: "9.0.3" }],
    ["container disk sent as bare 32G", { ...LXC_BODY, disk_size: "32G" }, { ...LXC_RECORD, diskSize: 32 }],
    [
      'empty numbers (`"disk_size": ,` repaired to null)',
      { ...LXC_BODY, disk_size: null, core_count: null, ram_size: null },
      { ...LXC_RECORD, diskSize: null, coreCount: null, ramSize: null },
    ],
    [
      "numbers sent as empty strings",
      { ...LXC_BODY, ct_type: "", disk_size: "", core_count: "", ram_size: "" },
      { ...LXC_RECORD, ctType: null, diskSize: null, coreCount: null, ramSize: null },
    ],
    [
      "numbers sent as strings",
      { ...LXC_BODY, ct_type: "1", disk_size: "8", core_count: "2", ram_size: "2048" },
      LXC_RECORD,
    ],
    [
      "newer client: host_version instead of pve_version",
      { ...without(LXC_BODY, "pve_version"), host_version: "8.4.1" },
      { ...LXC_RECORD, pveVersion: "8.4.1" },
    ],
    [
      "newer client: type turnkey",
      { ...LXC_BODY, type: "turnkey", nsapp: "turnkey-nextcloud" },
      { ...LXC_RECORD, type: "turnkey", nsapp: "turnkey-nextcloud" },
    ],
    [
      "newer client: type pve",
      { ...LXC_BODY, type: "pve", nsapp: "post-pve-install" },
      { ...LXC_RECORD, type: "pve", nsapp: "post-pve-install" },
    ],
    [
      "newer client: type addon",
      { ...LXC_BODY, type: "addon", nsapp: "netdata" },
      { ...LXC_RECORD, type: "addon", nsapp: "netdata" },
    ],
    [
      "newer client: type tool",
      { ...LXC_BODY, type: "tool", nsapp: "clean-lxcs" },
      { ...LXC_RECORD, type: "tool", nsapp: "clean-lxcs" },
    ],
    ["absent status means installing", without(LXC_BODY, "status"), LXC_RECORD],
    ["empty status means installing", { ...LXC_BODY, status: "" }, LXC_RECORD],
    ["only the required fields", { type: "lxc", random_id: ID }, MINIMAL_RECORD],
    [
      "unknown fields are kept in extra; the current clients' fields are not read from /upload",
      { ...LXC_BODY, exit_code: 0, hostname: "pve1", gpu_passthrough: "no" },
      { ...LXC_RECORD, extra: '{"hostname":"pve1"}' },
    ],
  ];
  test.each(cases)("%s", (_name, body, record) => expectStart(body, record));
});

describe("normalizeStart: text fields", () => {
  const cases: [string, JsonObject, Partial<StartReport>][] = [
    [
      "type, status, os_type and disableip6 are lowercased",
      { type: "LXC", status: "INSTALLING", os_type: "Debian", disableip6: "NO" },
      { type: "lxc", status: "installing", osType: "debian", disableip6: "no" },
    ],
    [
      "nsapp, method, os_version keep their case",
      { nsapp: "HomeAssistant", method: "Advanced", os_version: "Bookworm" },
      { nsapp: "HomeAssistant", method: "Advanced", osVersion: "Bookworm" },
    ],
    [
      "values are trimmed",
      { type: " vm ", os_type: "\tubuntu\n", os_version: " 22.04 ", nsapp: "  docker  ", pve_version: " 8.2.2\n" },
      { type: "vm", osType: "ubuntu", osVersion: "22.04", nsapp: "docker", pveVersion: "8.2.2" },
    ],
    [
      'empty and blank strings are kept as "", distinct from absent',
      { os_type: "", os_version: "   ", nsapp: "", method: "", pve_version: "" },
      { osType: "", osVersion: "", nsapp: "", method: "", pveVersion: "" },
    ],
    [
      "inner control characters become spaces",
      { nsapp: "home\tassistant", method: "de\nfault", os_version: "12\u0000" },
      { nsapp: "home assistant", method: "de fault", osVersion: "12" },
    ],
    ["colour codes are stripped from labels", { nsapp: "\u001b[1;92mjellyfin\u001b[m" }, { nsapp: "jellyfin" }],
    [
      "numbers for string fields are stringified",
      { os_version: 12, pve_version: 8.2, nsapp: 2048 },
      { osVersion: "12", pveVersion: "8.2", nsapp: "2048" },
    ],
    [
      "booleans for string fields are stringified",
      { disableip6: true, method: false },
      { disableip6: "true", method: "false" },
    ],
    [
      "null string fields are null",
      { os_type: null, nsapp: null, disableip6: null },
      { osType: null, nsapp: null, disableip6: null },
    ],
    ["pve_version wins over host_version", { pve_version: "8.2.2", host_version: "9.0.0" }, { pveVersion: "8.2.2" }],
    [
      "null pve_version falls back to host_version",
      { pve_version: null, host_version: "9.0.0" },
      { pveVersion: "9.0.0" },
    ],
    ['an empty pve_version is present and wins ("")', { pve_version: "", host_version: "9.0.0" }, { pveVersion: "" }],
    [
      "non-ASCII text is kept",
      { nsapp: "домашний-сервер", os_version: "12 🐧" },
      { nsapp: "домашний-сервер", osVersion: "12 🐧" },
    ],
    ["random_id is trimmed", { random_id: `  ${ID}\n` }, { randomId: ID }],
    ["a numeric random_id is stringified", { random_id: 1234567890 }, { randomId: "1234567890" }],
    [
      `random_id of exactly ${MAX_RANDOM_ID_LENGTH} characters`,
      { random_id: "r".repeat(128) },
      { randomId: "r".repeat(128) },
    ],
  ];
  test.each(cases)("%s", (_name, patch, expected) => {
    expectStart({ ...LXC_BODY, ...patch }, { ...LXC_RECORD, ...expected });
  });
});

describe("normalizeStart: numbers", () => {
  // [field, value sent, value stored]
  const cases: [string, unknown, number | null][] = [
    ["disk_size", "32G", 32],
    ["disk_size", "32g", 32],
    ["disk_size", "32GB", 32],
    ["disk_size", "32GiB", 32],
    ["disk_size", "32 G", 32],
    ["disk_size", " 32G ", 32],
    ["disk_size", '"32G"', 32], // quotes doubled by the shell
    ["disk_size", "'8'", 8],
    ["disk_size", "512M", 0.5],
    ["disk_size", "2T", 2048],
    ["disk_size", "1.5T", 1536],
    ["disk_size", "2.5", 2.5],
    ["disk_size", 2.5, 2.5],
    ["disk_size", ".5", 0.5],
    ["disk_size", "0", 0],
    ["disk_size", 0, 0],
    ["disk_size", "08", 8],
    ["disk_size", '""', null],
    ["disk_size", "   ", null],
    ["ram_size", "2048M", 2048],
    ["ram_size", "2048MB", 2048],
    ["ram_size", "2G", 2048],
    ["ram_size", "1.5G", 1536],
    ["ram_size", "0.5G", 512],
    ["ram_size", "1048576K", 1024],
    ["ram_size", "4096", 4096],
    ["ram_size", 2048, 2048],
    ["ram_size", "", null],
    ["core_count", "4", 4],
    ["core_count", "2.0", 2],
    ["core_count", 16, 16],
    ["core_count", 0, 0],
    ["ct_type", "2", 2],
    ["ct_type", 0, 0],
    ["ct_type", "", null],
  ];
  const key: Record<string, keyof StartReport> = {
    disk_size: "diskSize",
    ram_size: "ramSize",
    core_count: "coreCount",
    ct_type: "ctType",
  };
  test.each(cases)("%s %p -> %p", (field, sent, stored) => {
    expectStart({ ...LXC_BODY, [field]: sent }, { ...LXC_RECORD, [key[field]!]: stored });
  });
});

describe("normalizeStart: invalid bodies name the field", () => {
  // [what, body, field, message pattern]
  const cases: InvalidCase[] = [
    ["missing random_id", without(LXC_BODY, "random_id"), "random_id", /required/],
    ["empty random_id (client does not check)", { ...LXC_BODY, random_id: "" }, "random_id", /required/],
    ["blank random_id", { ...LXC_BODY, random_id: "  \t " }, "random_id"],
    ["null random_id", { ...LXC_BODY, random_id: null }, "random_id"],
    [
      `random_id of ${MAX_RANDOM_ID_LENGTH + 1} characters`,
      { ...LXC_BODY, random_id: "r".repeat(MAX_RANDOM_ID_LENGTH + 1) },
      "random_id",
      /128/,
    ],
    ["random_id with a NUL", { ...LXC_BODY, random_id: "abc\u0000def" }, "random_id", /control/],
    ["random_id with an inner newline", { ...LXC_BODY, random_id: "abc\ndef" }, "random_id", /control/],
    ["random_id with ESC", { ...LXC_BODY, random_id: "\u001b[31mabc" }, "random_id", /control/],
    ["random_id with a C1 control (NEL)", { ...LXC_BODY, random_id: "abc\u0085def" }, "random_id", /control/],
    ["random_id as an object", { ...LXC_BODY, random_id: { id: ID } }, "random_id", /object/],
    ["random_id as an array", { ...LXC_BODY, random_id: [ID] }, "random_id", /array/],
    ["missing type", without(LXC_BODY, "type"), "type", /required/],
    ["empty type", { ...LXC_BODY, type: "" }, "type", /required/],
    ["unknown type", { ...LXC_BODY, type: "ct" }, "type", /one of lxc, vm, turnkey, pve, addon, tool/],
    ["type docker", { ...LXC_BODY, type: "docker" }, "type", /"docker"/],
    ["numeric type", { ...LXC_BODY, type: 1 }, "type"],
    ["type as an array", { ...LXC_BODY, type: ["lxc"] }, "type", /array/],
    ["negative disk_size", { ...LXC_BODY, disk_size: -1 }, "disk_size", /non-negative/],
    ["negative ram_size as a string", { ...LXC_BODY, ram_size: "-512" }, "ram_size"],
    ["NaN ram_size", { ...LXC_BODY, ram_size: Number.NaN }, "ram_size"],
    ['"NaN" core_count', { ...LXC_BODY, core_count: "NaN" }, "core_count"],
    [
      "Infinity disk_size (1e999 in JSON)",
      JSON.parse(`{"type":"lxc","random_id":"${ID}","disk_size":1e999}`),
      "disk_size",
    ],
    ["huge ram_size", { ...LXC_BODY, ram_size: 1e20 }, "ram_size", /whole/],
    ["huge ram_size with a unit", { ...LXC_BODY, ram_size: "99999999999999T" }, "ram_size"],
    ["core_count beyond 2^53", { ...LXC_BODY, core_count: 2 ** 53 }, "core_count"],
    ["fractional core_count", { ...LXC_BODY, core_count: 2.5 }, "core_count", /whole/],
    ["unit on core_count", { ...LXC_BODY, core_count: "4G" }, "core_count", /"4G"/],
    ["unit on ct_type", { ...LXC_BODY, ct_type: "2M" }, "ct_type"],
    ["word for disk_size", { ...LXC_BODY, disk_size: "big" }, "disk_size", /32G/],
    ["unknown unit on ram_size", { ...LXC_BODY, ram_size: "2X" }, "ram_size", /2048M/],
    ["exponent string", { ...LXC_BODY, disk_size: "1e3" }, "disk_size"],
    ["boolean disk_size", { ...LXC_BODY, disk_size: true }, "disk_size", /boolean/],
    ["boolean core_count", { ...LXC_BODY, core_count: false }, "core_count", /boolean/],
    ["array ram_size", { ...LXC_BODY, ram_size: [2048] }, "ram_size", /array/],
    ["object ct_type", { ...LXC_BODY, ct_type: { value: 1 } }, "ct_type", /object/],
    ["object nsapp", { ...LXC_BODY, nsapp: { name: "debian" } }, "nsapp", /object/],
    ["array os_type", { ...LXC_BODY, os_type: ["debian"] }, "os_type", /array/],
    ["array os_version", { ...LXC_BODY, os_version: ["12"] }, "os_version", /array/],
    ["object disableip6", { ...LXC_BODY, disableip6: {} }, "disableip6", /object/],
    ["array method", { ...LXC_BODY, method: [] }, "method", /array/],
    ["object pve_version", { ...LXC_BODY, pve_version: { v: "8" } }, "pve_version", /object/],
    [
      "array host_version (no pve_version)",
      { ...without(LXC_BODY, "pve_version"), host_version: ["8.2"] },
      "host_version",
      /array/,
    ],
    ["object status", { ...LXC_BODY, status: { s: "installing" } }, "status", /object/],
    ["random_id is checked before type", { type: "nope" }, "random_id"],
  ];
  test.each(rows(cases))("%s", (_name, body, field, message) => {
    expectInvalid(normalizeStart(body, OPTS), field, message);
  });
});

describe("normalizeStart: __proto__ keys", () => {
  test("a __proto__ key from JSON.parse does not supply fields", async () => {
    const body = JSON.parse(`{"__proto__": {"type": "vm", "random_id": "x"}, "random_id": "${ID}"}`) as JsonObject;
    expectInvalid(normalizeStart(body, OPTS), "type", /required/);
  });

  test("a __proto__ key beside a full report supplies no field; it is kept as data in extra", async () => {
    const body = JSON.parse(
      `{"__proto__": {"nsapp": "evil", "ram_size": 1}, ${JSON.stringify(LXC_BODY).slice(1)}`,
    ) as JsonObject;
    expectStart(body, { ...LXC_RECORD, extra: '{"__proto__":{"nsapp":"evil","ram_size":1}}' });
    expect(({} as Record<string, unknown>).nsapp).toBeUndefined();
  });

  test("a string __proto__ supplies nothing; it is kept as data in extra", async () => {
    const body = JSON.parse(`{"__proto__": "x", ${JSON.stringify(VM_BODY).slice(1)}`) as JsonObject;
    expectStart(body, { ...VM_RECORD, extra: '{"__proto__":"x"}' });
  });
});

describe("normalizeStart: length caps", () => {
  const small: NormalizeOptions = { ...OPTS, maxFieldLength: 8 };
  const cases: [string, JsonObject, Partial<StartReport>][] = [
    ["nsapp cut to the cap", { nsapp: "nextcloudpi" }, { nsapp: "nextclou" }],
    ["text at exactly the cap is kept", { method: "advanced" }, { method: "advanced" }],
    ["a cut never splits a surrogate pair", { nsapp: "abcdefg🐧" }, { nsapp: "abcdefg" }],
    ["an emoji ending at the cap is kept", { nsapp: "abcdef🐧x" }, { nsapp: "abcdef🐧" }],
    ["whitespace left at the cut is trimmed", { os_version: "12      bookworm" }, { osVersion: "12" }],
    ["trimming happens before the cut", { nsapp: "        docker" }, { nsapp: "docker" }],
    [
      "the cap applies to pve_version too",
      { pve_version: "pve-manager/8.2.2/9355359cd7afbae4" },
      { pveVersion: "pve-mana" },
    ],
  ];
  test.each(cases)("%s", (_name, patch, expected) => {
    expectStart({ type: "lxc", random_id: ID, ...patch }, { ...MINIMAL_RECORD, ...expected }, small);
  });

  test("the default cap is 128 characters", async () => {
    expectStart({ ...LXC_BODY, nsapp: "n".repeat(500) }, { ...LXC_RECORD, nsapp: "n".repeat(128) });
  });

  test("the random_id cap does not depend on maxFieldLength", async () => {
    expectStart({ type: "lxc", random_id: "r".repeat(100) }, { ...MINIMAL_RECORD, randomId: "r".repeat(100) }, small);
  });
});

// ================================================================ normalizeUpdate

describe("normalizeUpdate: updates real clients send", () => {
  const cases: [string, JsonObject, StatusUpdate][] = [
    [
      "done / none",
      { status: "done", error: "none", random_id: ID },
      { randomId: ID, status: "done", outcome: "success", error: "none" },
    ],
    [
      "failed with the default error",
      { status: "failed", error: "No error message", random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: "No error message" },
    ],
    [
      "SIGINT trap: INTERRUPTED",
      { status: "failed", error: "INTERRUPTED", random_id: ID },
      { randomId: ID, status: "failed", outcome: "aborted", error: "INTERRUPTED" },
    ],
    [
      "SIGTERM trap: TERMINATED (143) is the user's abort, as the community reads it",
      { status: "failed", error: "TERMINATED", random_id: ID },
      { randomId: ID, status: "failed", outcome: "aborted", error: "TERMINATED" },
    ],
    [
      "bare exit code as text",
      { status: "failed", error: "127", random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: "127" },
    ],
    [
      "bare exit code as a number",
      { status: "failed", error: 100, random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: "100" },
    ],
    [
      "exit-code sentence",
      { status: "failed", error: "exit code 130: interrupted by user", random_id: ID },
      { randomId: ID, status: "failed", outcome: "aborted", error: "exit code 130: interrupted by user" },
    ],
    [
      "APT error sentence",
      { status: "failed", error: "APT: Lock held by another process (dpkg/apt still running)", random_id: ID },
      {
        randomId: ID,
        status: "failed",
        outcome: "failed",
        error: "APT: Lock held by another process (dpkg/apt still running)",
      },
    ],
    [
      "status is lowercased and trimmed",
      { status: " DONE\n", error: "none", random_id: ID },
      { randomId: ID, status: "done", outcome: "success", error: "none" },
    ],
    [
      "Failed + coloured INTERRUPTED is an abort",
      { status: "Failed", error: "\u001b[01;31mINTERRUPTED\u001b[m", random_id: ID },
      { randomId: ID, status: "failed", outcome: "aborted", error: "INTERRUPTED" },
    ],
    [
      "no error field",
      { status: "failed", random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: null },
    ],
    [
      "null error",
      { status: "done", error: null, random_id: ID },
      { randomId: ID, status: "done", outcome: "success", error: null },
    ],
    [
      'empty error is "" (sent, but empty)',
      { status: "failed", error: "", random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: "" },
    ],
    [
      'blank error is "" (sent, but empty)',
      { status: "failed", error: " \n\t ", random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: "" },
    ],
    [
      'error of only colour codes is "" (sent, but empty)',
      { status: "failed", error: "\u001b[31m\u001b[0m", random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: "" },
    ],
    [
      "boolean error is stringified",
      { status: "failed", error: false, random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: "false" },
    ],
    [
      "progress status",
      { status: "configuring", random_id: ID },
      { randomId: ID, status: "configuring", outcome: "in_progress", error: null },
    ],
    [
      "unknown status is kept",
      { status: "weird", error: "x", random_id: ID },
      { randomId: ID, status: "weird", outcome: "unknown", error: "x" },
    ],
    [
      "numeric status is stringified",
      { status: 0, random_id: ID },
      { randomId: ID, status: "0", outcome: "unknown", error: null },
    ],
    [
      "extra fields ignored",
      { status: "done", error: "none", random_id: ID, exit_code: 0, type: "bogus" },
      { randomId: ID, status: "done", outcome: "success", error: "none" },
    ],
  ];
  test.each(cases)("%s", (_name, body, update) => expectUpdate(body, update));
});

describe("normalizeUpdate: error text", () => {
  // [what, error sent, error stored]
  const cases: [string, string, string][] = [
    [
      "colour codes are stripped",
      "\u001b[01;31m[ERROR]\u001b[m in line \u001b[01;31m42\u001b[m: exit code \u001b[01;31m100\u001b[m: while executing command \u001b[33mapt-get update\u001b[m",
      "[ERROR] in line 42: exit code 100: while executing command apt-get update",
    ],
    [
      "erase-line and cursor codes are stripped",
      "\r\u001b[K\u001b[?25hDownloading...\u001b[2K done",
      "Downloading... done",
    ],
    [
      "OSC hyperlinks are stripped",
      "see \u001b]8;;https://example.com/docs\u0007the docs\u001b]8;;\u0007 now",
      "see the docs now",
    ],
    [
      "tput sgr0 (ESC ( B ESC [ m) is stripped",
      "\u001b[1m\u001b[31mfailed\u001b(B\u001b[m to start",
      "failed to start",
    ],
    ["SGR with colon parameters is stripped", "\u001b[38:5:196mred\u001b[0m text", "red text"],
    [
      "multi-line bash command keeps its lines",
      "apt-get install -y \\\n    curl \\\n    sudo",
      "apt-get install -y \\\n    curl \\\n    sudo",
    ],
    ["CRLF becomes LF", "line one\r\nline two\r\n", "line one\nline two"],
    ["lone CR becomes LF", "50%\r100%", "50%\n100%"],
    ["tabs are kept", "key:\tvalue\tother", "key:\tvalue\tother"],
    [
      "other control characters are removed",
      "be\u0007ll\u0000nul\u000bvt\u000cff\u007fdel\u001fus",
      "bellnulvtffdelus",
    ],
    ["C1 control characters are removed", "next\u0085line\u0080 x\u0099y", "nextline xy"],
    ["surrounding whitespace is trimmed", "\n\n   Unknown error   \n", "Unknown error"],
    [
      "raw quotes and backslashes are kept",
      'sed -i "s/\\"x\\"/y/" /etc/foo.conf',
      'sed -i "s/\\"x\\"/y/" /etc/foo.conf',
    ],
    [
      "IPv4 is masked",
      "curl: (7) Failed to connect to 192.168.1.5 port 8006",
      "curl: (7) Failed to connect to <ipv4> port 8006",
    ],
    [
      "IPv6 is masked",
      "dial tcp [2001:db8::1]:443: connect: network is unreachable",
      "dial tcp [<ipv6>]:443: connect: network is unreachable",
    ],
    [
      "IPs in URLs are masked",
      "wget http://10.0.0.2:3142/debian/dists/bookworm/Release failed",
      "wget http://<ipv4>:3142/debian/dists/bookworm/Release failed",
    ],
    ["control characters are removed before masking", "host 10.0.\u00000.1 down", "host <ipv4> down"],
    [
      "version strings are not masked",
      "pve-manager/8.2.2 requires libpve 1.2.3.4.5",
      "pve-manager/8.2.2 requires libpve 1.2.3.4.5",
    ],
    ["emoji and non-ASCII are kept", "✗ Échec de l'installation 🚫", "✗ Échec de l'installation 🚫"],
  ];
  test.each(cases)("%s", (_name, error, stored) => {
    expectUpdate(
      { status: "failed", error, random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: stored },
    );
  });

  test("masking can be turned off", async () => {
    const error = "Failed to connect to 192.168.1.5 and [fe80::1%eth0]:22";
    expectUpdate(
      { status: "failed", error, random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error },
      { ...OPTS, maskIps: false },
    );
  });

  test("masking happens before the cut, so a cut never leaves part of an address", async () => {
    const opts = { ...OPTS, maxErrorLength: 24 };
    expectUpdate(
      { status: "failed", error: "Failed to connect to 192.168.100.200 port 80", random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: "Failed to connect to <ip" },
      opts,
    );
  });
});

describe("normalizeUpdate: error length cap", () => {
  const small: NormalizeOptions = { ...OPTS, maxErrorLength: 10 };
  const cases: [string, string, string][] = [
    ["cut to the cap", "abcdefghijKLMNOP", "abcdefghij"],
    ["exactly the cap", "abcdefghij", "abcdefghij"],
    ["emoji at the cut point is dropped whole", "abcdefghi😀tail", "abcdefghi"],
    ["emoji ending at the cap is kept", "abcdefgh😀tail", "abcdefgh😀"],
    ["whitespace at the cut is trimmed", "abc       def", "abc"],
    ["line break at the cut is trimmed", "abcdefghi\nnext line", "abcdefghi"],
    ["the cap counts after colour codes are stripped", "\u001b[31m\u001b[1mabcdefghij\u001b[0mXYZ", "abcdefghij"],
  ];
  test.each(cases)("%s", (_name, error, stored) => {
    expectUpdate(
      { status: "failed", error, random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: stored },
      small,
    );
  });

  test("the default cap is 131,072 characters (current clients send ~10 KiB of log)", async () => {
    expect(OPTS.maxErrorLength).toBe(131_072);
    const line = "E: Unable to locate package libfoo-dev\n";
    const error = line.repeat(4000); // 156 000 characters
    expectUpdate(
      { status: "failed", error, random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: error.slice(0, 131_072).trim() },
    );
    // 10 KiB of log is kept whole.
    const log = line.repeat(256).trim();
    expectUpdate(
      { status: "failed", error: log, random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: log },
    );
  });

  test("a very long text with an emoji straddling the cap loses the whole emoji", async () => {
    const error = "x".repeat(131_071) + "🚀 rest";
    expectUpdate(
      { status: "failed", error, random_id: ID },
      { randomId: ID, status: "failed", outcome: "failed", error: "x".repeat(131_071) },
    );
  });

  test("a long text of colons is normalized without catastrophic backtracking (masking runs before the cut)", async () => {
    const error = ":".repeat(400_000);
    const started = performance.now();
    const result = updateView(normalizeUpdate({ status: "failed", error, random_id: ID }, OPTS));
    const elapsed = performance.now() - started;
    expect(result).toStrictEqual({
      ok: true,
      value: { randomId: ID, status: "failed", outcome: "failed", error: ":".repeat(131_072) },
    });
    // Generous: a backtracking regex takes minutes here, a linear one milliseconds.
    expect(elapsed).toBeLessThan(2000);
  });
});

describe("normalizeUpdate: invalid bodies name the field", () => {
  const cases: InvalidCase[] = [
    [
      "empty random_id (the client sends it)",
      { status: "failed", error: "INTERRUPTED", random_id: "" },
      "random_id",
      /required/,
    ],
    ["missing random_id", { status: "done", error: "none" }, "random_id", /required/],
    ["random_id too long", { status: "done", random_id: "u".repeat(MAX_RANDOM_ID_LENGTH + 1) }, "random_id"],
    ["random_id with a tab", { status: "done", random_id: "abc\tdef" }, "random_id", /control/],
    ["random_id as an array", { status: "done", random_id: [ID] }, "random_id", /array/],
    ["missing status", { error: "none", random_id: ID }, "status", /required/],
    ["empty status", { status: "", error: "none", random_id: ID }, "status", /required/],
    ["null status", { status: null, random_id: ID }, "status", /required/],
    ["blank status", { status: " \u001b[0m ", random_id: ID }, "status", /required/],
    ["status as an object", { status: { s: "done" }, random_id: ID }, "status", /object/],
    ["status as an array", { status: ["done"], random_id: ID }, "status", /array/],
    ["error as an object", { status: "failed", error: { code: 1 }, random_id: ID }, "error", /object/],
    ["error as an array", { status: "failed", error: ["line 1", "line 2"], random_id: ID }, "error", /array/],
    ["random_id is checked before status", { status: {}, random_id: "" }, "random_id"],
    ["status is checked before error", { status: [], error: {}, random_id: ID }, "status"],
  ];
  test.each(rows(cases))("%s", (_name, body, field, message) => {
    expectInvalid(normalizeUpdate(body, OPTS), field, message);
  });
});
