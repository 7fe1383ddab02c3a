import { describe, expect, test } from "bun:test";
import {
  ERROR_CATEGORIES,
  categoryFor,
  categoryOfExitCode,
  deriveCategory,
  normalizeCategory,
  type ErrorCategory,
} from "../../src/domain/error-category.ts";
import type { Outcome } from "../../src/domain/outcome.ts";

test("ERROR_CATEGORIES: the client's list, in a stable order", () => {
  expect(ERROR_CATEGORIES).toEqual([
    "network",
    "config",
    "timeout",
    "storage",
    "dependency",
    "permission",
    "proxmox",
    "service",
    "database",
    "runtime",
    "user_aborted",
    "resource",
    "signal",
    "shell",
    "unknown",
  ]);
});

describe("categoryOfExitCode", () => {
  // The community client's table (research notes A.5), core's 227 included.
  const TABLE: [ErrorCategory, number[]][] = [
    ["network", [6, 7, 22, 35]],
    ["timeout", [28, 124, 211]],
    ["storage", [214, 217, 219, 224]],
    ["dependency", [100, 101, 102, 127, 160, 161, 162, 255]],
    ["permission", [126, 152]],
    ["config", [10, 128, 203, 204, 205, 206, 207, 208]],
    ["proxmox", [200, 209, 210, 212, 213, 215, 216, 218, 220, 221, 222, 223, 225, 227, 231]],
    ["service", [150, 151, 153, 154]],
    ["database", [170, 171, 172, 173, 180, 181, 182, 183, 190, 191, 192, 193]],
    ["runtime", [243, 245, 246, 247, 248, 249]],
    // the signals, and the declines core files here (113, 114, 122, 253, 254)
    ["user_aborted", [113, 114, 122, 129, 130, 143, 253, 254]],
    ["resource", [134, 137]],
    ["signal", [139, 141]],
    ["shell", [1, 2]],
    // explained by the client but not categorized, and codes it does not know
    ["unknown", [0, 3, 5, 23, 75, 103, 112, 115, 125, 131, 199, 226, 239, 252, 256, -1]],
  ];
  test.each(TABLE.flatMap(([category, codes]) => codes.map((code) => [code, category] as const)))(
    "%p -> %s",
    (code, category) => {
      expect(categoryOfExitCode(code)).toBe(category);
    },
  );
});

// Every case: [exit code field, error text, expected category] for a failed run.
type Case = [exitCode: number | null, error: string | null, expected: ErrorCategory];

const APT_LOG = "E: Unable to locate package foo";
const header1 = (log: string) => `exit_code=1 | General error / Operation not permitted\n---\n${log}`;

const TABLE_FIRST: Case[] = [
  // a code the table knows decides, whatever the text says
  [100, "exit_code=100 | APT\n---\nTemporary failure resolving 'deb.debian.org'", "dependency"],
  [22, "exit_code=22 | curl\n---\nNo space left on device", "network"],
  [130, "exit_code=130 | Aborted by user (SIGINT)", "user_aborted"],
  [143, "exit_code=143 | Terminated (SIGTERM)", "user_aborted"], // the client files SIGTERM as an abort
  [137, null, "resource"],
  [227, "exit_code=227 | Proxmox: Container created but failed to start", "proxmox"],
  // the client reads the log for exit 1 only: 2 stays shell
  [2, `exit_code=2 | Misuse of shell builtins\n---\n${APT_LOG}`, "shell"],
  [2, null, "shell"],
];

// Exit 1 with each text rule, in the client's order first, then ours.
const EXIT_1: Case[] = [
  [1, null, "shell"],
  [1, "exit_code=1 | General error / Operation not permitted", "shell"], // not permission: every exit-1 header says it
  [1, header1("some unrelated output"), "shell"],
  [1, header1("E: Unable to locate package foo"), "dependency"],
  [1, header1("E: Package 'foo' has no installation candidate"), "dependency"],
  [
    1,
    header1("E: Failed to fetch http://deb.debian.org/x.deb  Temporary failure resolving 'deb.debian.org'"),
    "dependency",
  ], // apt before network
  [1, header1("dpkg: error processing package nginx (--configure):"), "dependency"],
  [1, header1("You have held broken packages."), "dependency"],
  [1, header1("The following packages have unmet dependencies:"), "dependency"],
  [1, header1("E: dpkg was interrupted, you must manually run 'dpkg --configure -a'"), "dependency"],
  [1, header1("Cannot allocate memory"), "resource"],
  [1, header1("FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"), "resource"],
  [1, header1("Out of memory: Killed process 1234 (node)\nConnection refused"), "resource"], // OOM before network
  [1, header1("oom-killer invoked"), "resource"],
  [1, header1("curl: (6) Could not resolve host: github.com"), "network"],
  [1, header1("DNS lookup failed"), "network"],
  [1, header1("connect to 10.0.0.1 port 443: Connection refused"), "network"],
  [1, header1("ping: connect: Network is unreachable"), "network"],
  [1, header1("No route to host\nNo space left on device"), "network"], // network before storage
  [1, header1("Temporary failure resolving 'archive.ubuntu.com'"), "network"],
  [1, header1("write /var/lib/x: no space left on device"), "storage"],
  [1, header1("npm ERR! code ENOSPC"), "storage"],
  [1, header1("Disk quota exceeded"), "storage"],
  [1, header1("error: errno -28\nbash: foo: command not found"), "storage"], // storage before command not found
  [1, header1("bash: line 3: yq: command not found"), "dependency"],
  [1, header1("FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/bin/uv'"), "dependency"],
  // our rules, for what the client's leave as shell
  [1, header1("mkdir: cannot create directory '/opt/x': Permission denied"), "permission"],
  [1, header1("Operation timed out after 30000 milliseconds"), "timeout"],
  [1, header1("Error: P1001: Can't reach database server (prisma)"), "database"],
  [1, header1("Job for nginx.service failed because the control process exited with error code."), "service"],
  [1, header1("storage 'local-lvm' does not exist"), "storage"],
  [1, header1("unable to create CT 105 - no such file"), "proxmox"],
  [1, header1("curl: (22) The requested URL returned error: 404"), "network"],
  [1, header1("ERROR: No matching distribution found for torch==9.9"), "dependency"],
  // the abort words count on the first line only: a log may quote any process's signal
  [1, header1("nginx: received SIGTERM, exiting"), "shell"],
];

// /upload and other texts without an exit code field.
const NO_CODE: Case[] = [
  [null, "E: Unable to locate package foo", "dependency"],
  [null, "E: Sub-process /usr/bin/dpkg returned an error code (1)", "dependency"],
  [null, "curl: (6) Could not resolve host: github.com", "network"],
  [null, "Temporary failure in name resolution", "network"],
  [null, "curl: (35) OpenSSL SSL_connect: SSL_ERROR_SYSCALL", "network"],
  [null, "wget: unable to resolve host address 'github.com'", "network"],
  [null, "No space left on device", "storage"],
  [null, "ERROR: unable to select packages:\n  foo (no such package)", "dependency"], // Alpine apk
  [null, "INTERRUPTED", "user_aborted"], // the legacy SIGINT trap: read as 130
  [null, "TERMINATED", "user_aborted"], // its SIGTERM trap: 143
  [null, "SIGINT received, cleaning up", "user_aborted"],
  [null, "Script aborted by user", "user_aborted"],
  [null, "Cancelled by user", "user_aborted"],
  [null, "Terminated by Ctrl+C (SIGINT)", "user_aborted"],
  [null, "Interrupted by user", "user_aborted"],
  [null, "130", "user_aborted"], // a bare code: the table
  [null, "100", "dependency"],
  [null, "exit code 127: while executing command curl -fsSL https://example.com/x.sh", "dependency"],
  [null, "exit_code=1 | General error / Operation not permitted", "shell"],
  [null, "bash: line 1: Permission denied", "permission"],
  [null, "pip install timed out", "timeout"],
  [null, "Error: timeout of 30000ms exceeded", "timeout"],
  [null, "Error: P3009 migrate found failed migrations (migration.sql)", "database"],
  [null, "ERROR 1045 (28000): Access denied for user 'root'@'localhost'", "database"],
  [null, 'psql: error: connection to server on socket "/run/postgresql/.s.PGSQL.5432" failed', "database"],
  [null, "systemctl enable -q --now nginx", "service"], // the legacy client sent the failing command
  [null, "Failed to start jellyfin.service", "service"],
  [null, "pct create 105 local:vztmpl/debian-12.tar.zst failed", "proxmox"],
  [null, "startup for container '105' failed", "proxmox"],
  [null, "cluster not ready - no quorum?", "proxmox"],
  [null, "storage 'nas' does not exist", "storage"],
  // nothing to go by
  [null, "none", "unknown"], // a failed install with the success placeholder
  [null, "No error message", "unknown"],
  [null, "Unknown error", "unknown"],
  [null, "", "unknown"],
  [null, null, "unknown"],
  [null, 'Unable to install "ha" at line 12', "unknown"],
  [null, "apt-get install -y dnsmasq", "unknown"], // DNS the word, not inside a package name
  [null, "lxc-attach -n 105 -- bash -c install.sh", "unknown"], // the install inside, not Proxmox
  // codes the table does not know: the text decides, else unknown
  [0, "exit_code=0 | Unknown error\n---\nNo space left on device", "storage"],
  [3, null, "unknown"],
  [75, "exit_code=75 | Temporary failure", "unknown"],
  [null, "exit code 1000", "unknown"],
];

const fmt = (c: Case) => [`${c[0]} + ${JSON.stringify(c[1])}`, ...c] as const;

describe.each([
  ["table first", TABLE_FIRST],
  ["exit 1: text rules", EXIT_1],
  ["no exit code field", NO_CODE],
] as const)("deriveCategory: %s", (_label, cases) => {
  test.each(cases.map(fmt))("%s", (_name, exitCode, error, expected) => {
    expect(deriveCategory({ exitCode, error })).toBe(expected);
    expect(deriveCategory({ exitCode, error, outcome: "failed" })).toBe(expected);
  });
});

describe("deriveCategory by outcome", () => {
  test.each([
    ["success", 0, "none", null],
    ["success", null, "INTERRUPTED", null],
    ["in_progress", null, null, null],
    ["aborted", 0, "exit_code=0 | Unknown error", "user_aborted"], // a clean exit without success
    ["aborted", null, null, "user_aborted"],
    ["unknown", null, null, null], // nothing to classify (a stuck install)
    ["unknown", 130, "exit_code=130 | Aborted by user (SIGINT)", "user_aborted"], // v1e sent aborts as unknown
    ["unknown", null, "E: Unable to locate package foo", "dependency"],
    ["unknown", null, "none", "unknown"],
  ] as [Outcome, number | null, string | null, ErrorCategory | null][])(
    "%s + %p + %p -> %p",
    (outcome, exitCode, error, expected) => {
      expect(deriveCategory({ exitCode, error, outcome })).toBe(expected);
    },
  );
});

describe("normalizeCategory", () => {
  test.each(ERROR_CATEGORIES.map((c) => [c, c] as const))("%p -> %p", (text, expected) => {
    expect(normalizeCategory(text)).toBe(expected);
  });
  test.each([
    [" Network ", "network"],
    ["USER_ABORTED", "user_aborted"],
    ["user-aborted", "user_aborted"],
    ["user aborted", "user_aborted"],
    // the reference server's words
    ["apt", "dependency"],
    ["command_not_found", "dependency"],
    ["build", "service"],
    ["preflight", "config"],
    ["APT", "dependency"],
    // anything else
    ["none", "unknown"],
    ["oom", "unknown"],
    ["network,timeout", "unknown"],
    ["", null],
    ["   ", null],
    [null, null],
  ] as [string | null, ErrorCategory | null][])("%p -> %p", (text, expected) => {
    expect(normalizeCategory(text)).toBe(expected);
  });
});

describe("categoryFor", () => {
  type ForCase = [
    clientCategory: string | null,
    exitCode: number | null,
    error: string | null,
    outcome: Outcome,
    expected: ErrorCategory | null,
  ];
  test.each([
    // the client's category wins over derivation
    ["network", 100, "exit_code=100 | APT", "failed", "network"],
    ["Storage", 1, header1(APT_LOG), "failed", "storage"],
    ["apt", 1, null, "failed", "dependency"],
    ["build", 153, null, "failed", "service"],
    ["somethingnew", 100, null, "failed", "unknown"],
    ["user_aborted", 0, "exit_code=0 | Unknown error", "aborted", "user_aborted"],
    ["timeout", null, null, "unknown", "timeout"],
    // none sent: derived
    [null, 1, header1(APT_LOG), "failed", "dependency"],
    ["", 127, null, "failed", "dependency"],
    ["  ", null, "No space left on device", "failed", "storage"],
    [null, null, "INTERRUPTED", "aborted", "user_aborted"],
    [null, null, "none", "failed", "unknown"],
    // no failure, no category, whatever was sent
    ["network", 0, "none", "success", null],
    [null, 0, "none", "success", null],
    ["network", null, null, "in_progress", null],
    [null, null, null, "unknown", null],
  ] as ForCase[])("%p + %p + %p (%s) -> %p", (clientCategory, exitCode, error, outcome, expected) => {
    expect(categoryFor({ clientCategory, exitCode, error, outcome })).toBe(expected);
  });
});
