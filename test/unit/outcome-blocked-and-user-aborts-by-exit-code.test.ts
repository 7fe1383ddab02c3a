// The community's outcome rule (docs/decisions/2026-11-27-blocked-adopted.md, domain/outcome.ts
// outcomeOfFailure), rule by rule: a success is a success, a run still going is unfinished, an
// abort the client named is an abort, then a failure's exit code decides: a user's abort code is
// an abort (category user_aborted), a code raised before the script ran is blocked (category
// kept), any other code a failure. Every client revision that can state a code is checked.
import { describe, expect, test } from "bun:test";
import { defaults } from "../../src/config.ts";
import { byExitCode, categoryOfExitCode } from "../../src/domain/error-category.ts";
import type { Report } from "../../src/domain/execution.ts";
import { normalizeTelemetry, normalizeUpdate } from "../../src/domain/normalize.ts";
import {
  BLOCKED_EXIT_CODES,
  OUTCOMES,
  OUTCOME_ORDER,
  USER_ABORT_EXIT_CODES,
  outcomeOfFailure,
  type Outcome,
} from "../../src/domain/outcome.ts";
import { decodeHeld, encodeHeld } from "../../src/store/common/budgets.ts";

const OPTS = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };
function ok<T>(c: { ok: true; value: T } | { ok: false; message: string }): T {
  if (!c.ok) throw new Error(c.message);
  return c.value;
}
const base = { random_id: "r1", execution_id: "e1", type: "lxc", nsapp: "nginx", os_type: "debian", os_version: "12" };
const v2 = (status: string, exit_code: number | null, error_category = "") =>
  ok(
    normalizeTelemetry(
      { ...base, payload_version: 2, status, exit_code, error: `exit_code=${exit_code}`, error_category },
      OPTS,
    ),
  );
const v1 = (status: string, exit_code: number | null, error_category = "") =>
  ok(normalizeTelemetry({ ...base, status, exit_code, error: `exit_code=${exit_code}`, error_category }, OPTS));
const upload = (status: string, error: string | null) => ok(normalizeUpdate({ random_id: "r1", status, error }, OPTS));

// The lists as the community service's newdash.go (telemetry-service d10f1897) writes them, spelled out here
// rather than derived, so a change to either list in src/ fails this test.
const USER_ABORTS = [113, 114, 122, 129, 130, 143, 253, 254];
const BLOCKED = [
  103, 104, 105, 106, 107, 108, 109, 110, 111, 116, 117, 118, 119, 120, 121, 123, 200, 203, 204, 205, 206, 207, 208,
  209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 231,
];

describe("the lists", () => {
  test("user aborts and blocked codes are the community's, and do not overlap", () => {
    expect([...USER_ABORT_EXIT_CODES].sort((a, b) => a - b)).toEqual(USER_ABORTS);
    expect([...BLOCKED_EXIT_CODES].sort((a, b) => a - b)).toEqual(BLOCKED);
    for (const code of USER_ABORTS) expect(BLOCKED_EXIT_CODES.has(code)).toBe(false);
  });
  test("every user-abort code is user_aborted in the client's category table", () => {
    for (const code of USER_ABORTS) expect(categoryOfExitCode(code)).toBe("user_aborted");
  });
  test("blocked is a sixth outcome, stored last (SQLite keeps the index), listed after failed", () => {
    expect(OUTCOMES).toEqual(["success", "failed", "aborted", "in_progress", "unknown", "blocked"]);
    expect(OUTCOME_ORDER).toEqual(["success", "failed", "blocked", "aborted", "in_progress", "unknown"]);
  });
});

describe("outcomeOfFailure, every code 0-255 and none", () => {
  const expected = (code: number | null): Outcome =>
    code === null ? "failed" : USER_ABORTS.includes(code) ? "aborted" : BLOCKED.includes(code) ? "blocked" : "failed";
  const codes = [null, ...Array.from({ length: 256 }, (_, i) => i), 999];
  test.each(codes.map((c) => [c, expected(c)] as const))("failed with %p is %s", (code, outcome) => {
    expect(outcomeOfFailure("failed", code)).toBe(outcome);
  });
  // The order of the rule: an outcome other than failed is taken at its word, whatever the code.
  test.each([
    ["success", 214],
    ["success", 130],
    ["aborted", 214],
    ["in_progress", 214],
    ["unknown", 214],
    ["unknown", 143],
    ["blocked", 1],
  ] as const)("%s with %p stays %s", (outcome, code) => {
    expect(outcomeOfFailure(outcome, code)).toBe(outcome);
  });
});

type Row = [name: string, report: () => Report, outcome: Outcome, exitCode: number | null, category: string | null];
const RULES: Row[] = [
  // success is success
  ["v2 success 0", () => v2("success", 0), "success", 0, null],
  ["v1 success with a stray 214", () => v1("success", 214), "success", 214, null],
  // a status that is not an ending: unfinished, no code kept
  ["v2 configuring with 214 in the payload", () => v2("configuring", 214), "in_progress", null, null],
  // an abort the client named is an abort, whatever its code
  ["v2 aborted 214, its category as sent", () => v2("aborted", 214, "storage"), "aborted", 214, "storage"],
  // user-abort codes: an abort by the user, category user_aborted, for every client
  ["v2 failed 129 (SIGHUP)", () => v2("failed", 129, "signal"), "aborted", 129, "user_aborted"],
  ["v1 failed 143 (SIGTERM)", () => v1("failed", 143, ""), "aborted", 143, "user_aborted"],
  ["v1 failed 130 without a text saying so", () => v1("failed", 130, "unknown"), "aborted", 130, "user_aborted"],
  [
    '/upload failed "TERMINATED" (the legacy trap: 143)',
    () => upload("failed", "TERMINATED"),
    "aborted",
    143,
    "user_aborted",
  ],
  ['/upload failed "exit code 129"', () => upload("failed", "exit code 129"), "aborted", 129, "user_aborted"],
  // blocked: before the script ran; the category as sent or derived
  ["v2 failed 214 storage", () => v2("failed", 214, "storage"), "blocked", 214, "storage"],
  ["v2 failed 203 config", () => v2("failed", 203, "config"), "blocked", 203, "config"],
  ["v1 failed 103 no category", () => v1("failed", 103), "blocked", 103, "unknown"],
  ["v1 failed 231 no category", () => v1("failed", 231), "blocked", 231, "proxmox"],
  ["v1 failed 200", () => v1("failed", 200, "proxmox"), "blocked", 200, "proxmox"],
  ['/upload failed "exit code 206"', () => upload("failed", "exit code 206"), "blocked", 206, "config"],
  // the neighbours of the lists stay failures
  ["v1 failed 102", () => v1("failed", 102), "failed", 102, "dependency"],
  ["v1 failed 112", () => v1("failed", 112), "failed", 112, "unknown"],
  ["v1 failed 115", () => v1("failed", 115), "failed", 115, "unknown"],
  ["v1 failed 201", () => v1("failed", 201), "failed", 201, "unknown"],
  ["v1 failed 228", () => v1("failed", 228), "failed", 228, "unknown"],
  ["v1 failed 1", () => v1("failed", 1, "shell"), "failed", 1, "shell"],
  ["v2 failed 199 (engine: exit code not reported)", () => v2("failed", 199), "failed", 199, "unknown"],
  // an ending the client could not name stays unknown (a timed-out run is not the script's failure either)
  ["v1 unknown 214", () => v1("unknown", 214), "unknown", 214, "storage"],
];

describe("every client revision, rule by rule", () => {
  test.each(RULES.map((r) => [r[0], r] as const))("%s", (_name, [, report, outcome, exitCode, category]) => {
    const r = report();
    expect({ outcome: r.outcome, exitCode: r.exitCode, errorCategory: r.errorCategory }).toEqual({
      outcome,
      exitCode,
      errorCategory: category,
    });
  });
});

describe("byExitCode", () => {
  type Ending = { outcome: Outcome; exitCode: number | null; errorCategory: string | null };
  const failed = (exitCode: number, errorCategory: string): Ending => ({ outcome: "failed", exitCode, errorCategory });
  test("a blocked failure keeps its category; an abort's becomes user_aborted", () => {
    expect(byExitCode(failed(217, "storage"))).toEqual({
      outcome: "blocked",
      exitCode: 217,
      errorCategory: "storage",
    });
    expect(byExitCode(failed(143, "signal"))).toEqual({
      outcome: "aborted",
      exitCode: 143,
      errorCategory: "user_aborted",
    });
  });
  test("a report held by a release before the rule is read blocked", () => {
    const before: Report = { ...v1("failed", 209, "proxmox"), outcome: "failed" };
    expect(decodeHeld(encodeHeld(before))).toMatchObject({
      outcome: "blocked",
      exitCode: 209,
      errorCategory: "proxmox",
    });
  });
});
