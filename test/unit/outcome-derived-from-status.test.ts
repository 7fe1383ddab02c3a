import { describe, expect, test } from "bun:test";
import { deriveOutcome, isFinal, type Outcome } from "../../src/domain/outcome.ts";

// deriveOutcome receives what normalize produced: status trimmed and lowercased, error
// cleaned (or null). Every case: [status, error, expected outcome].
type Case = [status: string, error: string | null, expected: Outcome];

const SUCCESS: Case[] = [
  ["done", "none", "success"], // what the reference client sends on success
  ["done", null, "success"],
  ["success", null, "success"],
  ["succeeded", null, "success"],
  ["completed", null, "success"],
  ["ok", null, "success"],
  // the status decides first: an interrupt text on a success is still a success
  ["done", "INTERRUPTED", "success"],
];

const FAILED: Case[] = [
  ["failed", null, "failed"],
  ["failed", "No error message", "failed"], // the client's default error
  ["failed", "none", "failed"],
  ["failed", "Unknown error", "failed"],
  ["failed", "apt-get install -y nginx >/dev/null", "failed"], // raw bash command
  ["failed", "exit code 127: while executing command curl -fsSL https://example.com/x.sh", "failed"],
  ["failed", "E: Sub-process /usr/bin/dpkg returned an error code (1)", "failed"],
  // SIGTERM stays a failure: host shutdowns and timeouts look the same
  ["failed", "TERMINATED", "failed"],
  ["failed", "terminated", "failed"],
  ["failed", "143", "failed"],
  ["failed", "Terminated (SIGTERM)", "failed"],
  ["failed", "SIGTERM", "failed"],
  ["failed", "129", "failed"], // SIGHUP
  ["failed", "Killed (SIGKILL / Out of memory?)", "failed"],
  // 130 must be the whole number
  ["failed", "exit code 1300", "failed"],
  ["failed", "exit code 13", "failed"],
  ["failed", "1301", "failed"],
  ["failure", null, "failed"],
  ["fail", "exit code 1", "failed"],
  ["error", "something broke", "failed"],
  ["errored", null, "failed"],
];

const ABORTED: Case[] = [
  // the reference client's SIGINT trap
  ["failed", "INTERRUPTED", "aborted"],
  ["failed", "interrupted", "aborted"],
  ["failed", "Interrupted by user", "aborted"],
  ["failed", "  INTERRUPTED", "aborted"],
  ["failed", "SIGINT", "aborted"],
  ["failed", "SIGINT received, cleaning up", "aborted"],
  ["failed", "exit code 130", "aborted"],
  ["failed", "Exit code: 130", "aborted"],
  ["failed", "EXIT CODE 130 (Ctrl-C)", "aborted"],
  ["failed", "exited with code 130", "aborted"],
  ["failed", "exit 130", "aborted"],
  ["failed", "code 130", "aborted"],
  ["failed", "aborted by user", "aborted"],
  ["failed", "Cancelled by user", "aborted"],
  ["failed", "canceled by user", "aborted"],
  ["failed", "user abort", "aborted"],
  ["failed", "User cancelled the installation", "aborted"],
  ["error", "INTERRUPTED", "aborted"],
  ["failure", "exit code 130", "aborted"],
  // Scripts trap SIGINT with `post_update_to_api "failed" "130"`: the bare exit code.
  ["failed", "130", "aborted"],
  // The sentence real clients use to explain exit code 130.
  ["failed", "Terminated by Ctrl+C (SIGINT)", "aborted"],
  ["failed", "exit status 130", "aborted"],
  // explicit abort statuses, whatever the error
  ["aborted", null, "aborted"],
  ["abort", null, "aborted"],
  ["cancelled", "none", "aborted"],
  ["canceled", null, "aborted"],
  ["interrupted", null, "aborted"],
];

const IN_PROGRESS: Case[] = [
  ["installing", null, "in_progress"], // every start report
  ["started", null, "in_progress"],
  ["starting", null, "in_progress"],
  ["running", null, "in_progress"],
  ["pending", null, "in_progress"],
  ["configuring", null, "in_progress"],
  ["downloading", null, "in_progress"],
  ["updating", null, "in_progress"],
  ["building", null, "in_progress"],
  ["in_progress", null, "in_progress"],
  ["in progress", null, "in_progress"],
  ["installing", "INTERRUPTED", "in_progress"],
];

const UNKNOWN: Case[] = [
  ["", null, "unknown"],
  ["unknown", null, "unknown"],
  ["paused", null, "unknown"],
  ["42", null, "unknown"],
  ["garbage", "INTERRUPTED", "unknown"],
];

const fmt = (c: Case) => [`${JSON.stringify(c[0])} + ${JSON.stringify(c[1])}`, ...c] as const;

describe.each([
  ["success", SUCCESS],
  ["failed", FAILED],
  ["aborted", ABORTED],
  ["in_progress", IN_PROGRESS],
  ["unknown", UNKNOWN],
] as const)("deriveOutcome -> %s", (_label, cases) => {
  test.each(cases.map(fmt))("%s", (_name, status, error, expected) => {
    expect(deriveOutcome(status, error)).toBe(expected);
  });
});

describe("isFinal", () => {
  test.each([
    ["success", true],
    ["failed", true],
    ["aborted", true],
    ["unknown", true],
    ["in_progress", false],
  ] as [Outcome, boolean][])("%s -> %p", (outcome, final) => {
    expect(isFinal(outcome)).toBe(final);
  });

  test("a start report's outcome is never final; a client's done/failed always is", async () => {
    expect(isFinal(deriveOutcome("installing", null))).toBe(false);
    expect(isFinal(deriveOutcome("done", "none"))).toBe(true);
    expect(isFinal(deriveOutcome("failed", "No error message"))).toBe(true);
    expect(isFinal(deriveOutcome("failed", "INTERRUPTED"))).toBe(true);
  });
});
