// One meaning for a user's decline (domain/error-category.ts byExitCode), table by table: every
// client revision that can state an exit code, the codes that are declines and those that are not,
// what a held report and a stored execution become, and the lifecycle around them.
import { describe, expect, test } from "bun:test";
import { defaults } from "../../src/config.ts";
import { byExitCode, categoryOfExitCode } from "../../src/domain/error-category.ts";
import type { Report } from "../../src/domain/execution.ts";
import { explainExitCode } from "../../src/domain/exit-codes.ts";
import { decide, executionFromHeld } from "../../src/domain/lifecycle.ts";
import { normalizeStart, normalizeTelemetry, normalizeUpdate } from "../../src/domain/normalize.ts";
import { USER_ABORT_EXIT_CODES, type Outcome } from "../../src/domain/outcome.ts";
import { decodeHeld, encodeHeld } from "../../src/store/common/budgets.ts";

const OPTS = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };
function ok<T>(c: { ok: true; value: T } | { ok: false; message: string }): T {
  if (!c.ok) throw new Error(c.message);
  return c.value;
}

const DECLINES = [113, 114, 122, 253, 254];
const base = {
  random_id: "r1",
  execution_id: "e1",
  type: "lxc",
  nsapp: "nginx",
  os_type: "debian",
  os_version: "12",
  pve_version: "8.4.1",
};
/** The newest engine (core after a495a11): a decline arrives as aborted with user_aborted. */
const v2 = (
  status: string,
  exit_code: number | null,
  error_category: string,
  error = `exit_code=${exit_code} | declined`,
) => ok(normalizeTelemetry({ ...base, payload_version: 2, status, exit_code, error, error_category }, OPTS));
/** ProxmoxVE misc/api.func (v1) and older engines: the same decline as failed, with their own category. */
const v1 = (
  status: string,
  exit_code: number | null,
  error_category: string,
  error = `exit_code=${exit_code} | declined`,
) => ok(normalizeTelemetry({ ...base, status, exit_code, error, error_category }, OPTS));
/** /upload: the code only in the error text. */
const upload = (status: string, error: string | null) => ok(normalizeUpdate({ random_id: "r1", status, error }, OPTS));

type Row = [name: string, report: () => Report, outcome: Outcome, exitCode: number | null, category: string | null];

const EVERY_CLIENT: Row[] = DECLINES.flatMap((code): Row[] => [
  [
    `v2 aborted ${code} user_aborted (newest engine)`,
    () => v2("aborted", code, "user_aborted"),
    "aborted",
    code,
    "user_aborted",
  ],
  [`v2 failed ${code} (engines before the rule)`, () => v2("failed", code, "shell"), "aborted", code, "user_aborted"],
  [`v1 failed ${code} category unknown`, () => v1("failed", code, "unknown"), "aborted", code, "user_aborted"],
  [`v1 failed ${code} no category`, () => v1("failed", code, ""), "aborted", code, "user_aborted"],
  [
    `/upload failed "exit_code=${code} | ..."`,
    () => upload("failed", `exit_code=${code} | LXC: the user said no`),
    "aborted",
    code,
    "user_aborted",
  ],
  [`/upload failed "exit code ${code}"`, () => upload("failed", `exit code ${code}`), "aborted", code, "user_aborted"],
  [`/upload failed bare "${code}"`, () => upload("failed", String(code)), "aborted", code, "user_aborted"],
]);

const NOT_DECLINES: Row[] = [
  // 199: the engine's "exit code not reported", kept as sent: a failure of unknown cause
  [
    "v2 failed 199",
    () => v2("failed", 199, "unknown", "exit_code=199 | Engine: exit code not reported"),
    "failed",
    199,
    "unknown",
  ],
  ["v2 failed 199 no category", () => v2("failed", 199, ""), "failed", 199, "unknown"],
  ["v1 failed 1 (its default when no code was passed)", () => v1("failed", 1, "shell"), "failed", 1, "shell"],
  ["v1 failed 100", () => v1("failed", 100, "dependency"), "failed", 100, "dependency"],
  ["v1 failed 112 (invalid menu choice: not a decline)", () => v1("failed", 112, "unknown"), "failed", 112, "unknown"],
  ["v1 failed 115", () => v1("failed", 115, ""), "failed", 115, "unknown"],
  // 121 and 123 are raised before the script runs: blocked (outcome-blocked-and-user-aborts-by-exit-code.test.ts)
  ["v1 failed 121", () => v1("failed", 121, ""), "blocked", 121, "unknown"],
  ["v1 failed 123", () => v1("failed", 123, ""), "blocked", 123, "unknown"],
  ["v1 failed 252", () => v1("failed", 252, ""), "failed", 252, "unknown"],
  ["v1 failed 255", () => v1("failed", 255, ""), "failed", 255, "dependency"],
  // the status decides first: a success stays one, and an ending the client could not name stays unknown
  ["v2 success 0", () => v2("success", 0, "", ""), "success", 0, null],
  ["v1 success with a stray 254", () => v1("success", 254, "", ""), "success", 254, null],
  ["v1 unknown 113", () => v1("unknown", 113, "unknown"), "unknown", 113, "unknown"],
  // a decline code stated further down the text is not the run's code
  [
    "/upload failed, 253 only in the log",
    () => upload("failed", "exit_code=1 | General error\n---\nexit code 253"),
    "failed",
    1,
    "shell",
  ],
  ["/upload failed, no code", () => upload("failed", "apt-get install -y nginx"), "failed", null, "unknown"],
  // progress pings carry no ending at all
  ["v2 configuring with exit 254 in the payload", () => v2("configuring", 254, ""), "in_progress", null, null],
];

describe.each([
  ["every client revision, every decline code", EVERY_CLIENT],
  ["codes and endings that are not declines", NOT_DECLINES],
] as const)("%s", (_label, rows) => {
  test.each(rows.map((r) => [r[0], r] as const))("%s", (_name, [, report, outcome, exitCode, category]) => {
    const r = report();
    expect({ outcome: r.outcome, exitCode: r.exitCode, errorCategory: r.errorCategory }).toEqual({
      outcome,
      exitCode,
      errorCategory: category,
    });
  });
});

describe("the rule itself", () => {
  test("the decline codes are among the user's abort codes, and the client table files them as user_aborted", () => {
    for (const code of DECLINES) expect(USER_ABORT_EXIT_CODES.has(code)).toBe(true);
    for (const code of DECLINES) expect(categoryOfExitCode(code)).toBe("user_aborted");
    expect(categoryOfExitCode(199)).toBe("unknown");
  });
  test("199 is explained as the engine's own code", () => {
    expect(explainExitCode(199)).toMatch(/^Engine: /);
  });
  type Ending = { outcome: Outcome; exitCode: number | null; errorCategory: string | null };
  const endings: [Ending, Ending][] = [
    [
      { outcome: "failed", exitCode: 254, errorCategory: "shell" },
      { outcome: "aborted", exitCode: 254, errorCategory: "user_aborted" },
    ],
    [
      { outcome: "failed", exitCode: 253, errorCategory: null },
      { outcome: "aborted", exitCode: 253, errorCategory: "user_aborted" },
    ],
    [
      { outcome: "failed", exitCode: null, errorCategory: null },
      { outcome: "failed", exitCode: null, errorCategory: null },
    ],
    [
      { outcome: "aborted", exitCode: 130, errorCategory: "user_aborted" },
      { outcome: "aborted", exitCode: 130, errorCategory: "user_aborted" },
    ],
    [
      { outcome: "unknown", exitCode: 114, errorCategory: "unknown" },
      { outcome: "unknown", exitCode: 114, errorCategory: "unknown" },
    ],
  ];
  test.each(endings)("byExitCode(%j) = %j", (ending, expected) => {
    expect(byExitCode(ending)).toEqual(expected);
  });
  test("an ending that is not a decline is returned as it is (no copy)", () => {
    const ending = { outcome: "failed" as const, exitCode: 1, errorCategory: "shell" };
    expect(byExitCode(ending)).toBe(ending);
  });
});

describe("reports held from before the rule", () => {
  // A v1 final report held (its start had not come) by a release that filed declines as failures.
  const before: Report = { ...v1("failed", 113, "unknown"), outcome: "failed", errorCategory: "unknown" };
  test.each([
    ["stored as JSON", encodeHeld(before)],
    ["stored compressed", encodeHeld({ ...before, error: "exit_code=113 | too small\n".repeat(200) })],
  ])("%s: read back as an abort", (_name, columns) => {
    const report = decodeHeld(columns);
    expect(report.outcome).toBe("aborted");
    expect(report.errorCategory).toBe("user_aborted");
    expect(report.exitCode).toBe(113);
  });
  test("applied when its start comes: the execution is an abort", () => {
    const held = { report: decodeHeld(encodeHeld(before)), at: 1000, repaired: false };
    const start = ok(normalizeTelemetry({ ...base, status: "installing" }, OPTS));
    const d = decide(undefined, start, { at: 2000, attempt: 1, held, repaired: false });
    expect(d.kind).toBe("insert");
    if (d.kind !== "insert") return;
    expect(d.row).toMatchObject({ status: "failed", outcome: "aborted", exitCode: 113, errorCategory: "user_aborted" });
  });
  test("applied on its own when its start never came (expire-held): an abort, created when received", () => {
    const row = executionFromHeld({ report: decodeHeld(encodeHeld(before)), at: 5000, repaired: false }, 1);
    expect(row).toMatchObject({ outcome: "aborted", errorCategory: "user_aborted", createdAt: 5000, durationMs: null });
  });
});

describe("the lifecycle around a decline", () => {
  test("v1 start, then failed 254: the execution ends aborted, status kept as sent", () => {
    const start = ok(normalizeTelemetry({ ...base, status: "installing" }, OPTS));
    const first = decide(undefined, start, { at: 1000, attempt: 1, held: null, repaired: false });
    if (first.kind !== "insert") throw new Error(first.kind);
    const end = decide(first.row, v1("failed", 254, "unknown"), { at: 4000, attempt: 1, held: null, repaired: false });
    expect(end.kind).toBe("update");
    if (end.kind !== "update") return;
    expect(end.row).toMatchObject({
      status: "failed",
      outcome: "aborted",
      errorCategory: "user_aborted",
      exitCode: 254,
      durationMs: 3000,
    });
  });
  test('/upload start, then failed "exit code 122": aborted', () => {
    const first = decide(undefined, ok(normalizeStart({ random_id: "r1", type: "lxc", nsapp: "nginx" }, OPTS)), {
      at: 0,
      attempt: 1,
      held: null,
      repaired: false,
    });
    if (first.kind !== "insert") throw new Error(first.kind);
    const end = decide(first.row, upload("failed", "exit code 122"), {
      at: 10,
      attempt: 1,
      held: null,
      repaired: false,
    });
    expect(end.kind === "update" && end.row.outcome).toBe("aborted");
  });
  test("a final decline before any start is held, as every final report of an install is", () => {
    expect(
      decide(undefined, v2("aborted", 254, "user_aborted"), { at: 0, attempt: 1, held: null, repaired: false }).kind,
    ).toBe("hold");
    expect(
      decide(undefined, v1("failed", 113, "unknown"), { at: 0, attempt: 1, held: null, repaired: false }).kind,
    ).toBe("hold");
  });
  test("a second final report of an aborted run is a duplicate, not a conflict, when it says the same", () => {
    const start = ok(normalizeTelemetry({ ...base, status: "installing" }, OPTS));
    const first = decide(undefined, start, { at: 0, attempt: 1, held: null, repaired: false });
    if (first.kind !== "insert") throw new Error(first.kind);
    const end = decide(first.row, v1("failed", 113, "unknown"), { at: 1, attempt: 1, held: null, repaired: false });
    if (end.kind !== "update") throw new Error(end.kind);
    const again = decide(end.row, v1("failed", 113, "unknown"), { at: 2, attempt: 1, held: null, repaired: false });
    expect(again).toEqual({ kind: "duplicate", row: null, conflict: null });
  });
});
