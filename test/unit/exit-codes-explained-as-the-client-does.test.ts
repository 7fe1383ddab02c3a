import { describe, expect, test } from "bun:test";
import { EXIT_CODE_EXPLANATIONS, explainExitCode, parseExitCode } from "../../src/domain/exit-codes.ts";

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

// The codes the community client explains (research notes A.5), core's 227 and 199 included.
const CLIENT_CODES = [
  ...range(1, 8),
  10,
  16,
  18,
  ...range(22, 28),
  30,
  ...range(32, 36),
  39,
  ...range(44, 48),
  51,
  52,
  ...range(55, 57),
  59,
  61,
  63,
  ...range(64, 79),
  92,
  95,
  ...range(100, 102),
  ...range(103, 108),
  ...range(109, 123),
  ...range(124, 132),
  134,
  137,
  139,
  141,
  143,
  144,
  146,
  ...range(150, 154),
  ...range(160, 162),
  ...range(170, 173),
  ...range(180, 183),
  ...range(190, 193),
  199,
  200,
  ...range(203, 227),
  231,
  ...range(232, 238),
  239,
  243,
  ...range(245, 249),
  ...range(250, 254),
  255,
];

describe("EXIT_CODE_EXPLANATIONS", () => {
  test("explains exactly the codes the community client explains", () => {
    expect([...EXIT_CODE_EXPLANATIONS.keys()].sort((a, b) => a - b)).toEqual(CLIENT_CODES);
  });

  test("every explanation is a short sentence of its own", () => {
    const texts = [...EXIT_CODE_EXPLANATIONS.values()];
    for (const text of texts) expect(text.length).toBeGreaterThan(5);
    for (const text of texts) expect(text.length).toBeLessThanOrEqual(80);
    // codes that share a meaning are told apart by their prefix (PostgreSQL: / MySQL/MariaDB: ...)
    const repeated = texts.filter((t, i) => texts.indexOf(t) !== i);
    expect(repeated).toEqual([]);
  });
});

describe("explainExitCode", () => {
  test.each([
    [0, "Success"],
    [1, "General error"],
    [100, "APT: install failed (broken packages or dependencies)"],
    [127, "Command not found"],
    [130, "Interrupted by the user (SIGINT, Ctrl-C)"],
    [227, "Proxmox: container created but would not start"],
    [199, "Engine: no exit code was reported to the telemetry call"],
    // not explained by the client
    [9, "Unknown error"],
    [133, "Unknown error"],
    [256, "Unknown error"],
    [-1, "Unknown error"],
  ])("%p -> %p", (code, text) => {
    expect(explainExitCode(code)).toBe(text);
  });
});

// Every case: [error text, stated exit code].
type Case = [error: string | null, expected: number | null];

const CLIENT_HEADERS: Case[] = [
  ["exit_code=100 | APT: Package manager error (broken packages / dependency problems)", 100],
  ["exit_code=0 | Unknown error", 0], // a clean exit without success (aborted)
  ["exit_code=255 | DPKG: Fatal internal error", 255],
  ["exit_code=1 | General error / Operation not permitted | at line 42: apt-get install -y nginx", 1],
  ["exit_code=127 | Command not found | command: foo --version", 127],
  // the code on the first line; line numbers, versions, IPs and other codes after it
  [
    "exit_code=100 | APT: Package manager error | at line 88: $STD apt-get install -y nodejs\n---\n" +
      "E: Sub-process /usr/bin/dpkg returned an error code (1)\nnodejs 20.11.1 from 192.168.1.100\nexit code 2",
    100,
  ],
  ["exit_code=1 | General error\n---\nError: Cannot find module 'x'\n    at line 12:4\nexit status 3", 1],
  // the .errinfo file's own line
  ["EXIT_CODE=137\nLINE=210\nCOMMAND=npm run build", 137],
];

const SENTENCES: Case[] = [
  ["exit code 127: while executing command curl -fsSL https://example.com/x.sh", 127],
  ["[ERROR] in line 42: exit code 1: while executing command apt-get update", 1],
  ["Exit code 130: Terminated by Ctrl+C (SIGINT)", 130],
  ["Exit code: 28", 28],
  ["EXIT CODE 100", 100],
  ["exit-code 5", 5],
  ["exit status 1", 1],
  ["Command failed with exit status 22", 22],
  ["Command 'pip install x' returned non-zero exit status 1.", 1],
  ["Process exited with code 243", 243],
  ["child process exited with status 2", 2],
  ["npm exited with exit code 249", 249],
  ["script returned code 3", 3],
  ["installer returned with code 4", 4],
  ["build failed (exit code 153)", 153],
  ["exit code 0", 0],
  ["Exit code 255.", 255],
  // the first statement wins
  ["exit code 7, then exit status 9", 7],
  ["exit code -1\nexit status 6", 6], // a negative number states nothing
];

const BARE_AND_TRAPS: Case[] = [
  ["100", 100],
  ["  130  ", 130],
  ["0", 0],
  ["255", 255],
  ["INTERRUPTED", 130], // the legacy client's SIGINT trap
  ["interrupted", 130],
  ["TERMINATED", 143], // its SIGTERM trap
  [" Terminated ", 143],
];

const NOTHING_STATED: Case[] = [
  [null, null],
  ["", null],
  ["   ", null],
  ["none", null], // what the client sends on success
  ["No error message", null], // the legacy client's default
  ["Unknown error", null],
  ["exit code 1000", null],
  ["exit code 256", null],
  ["1301", null],
  ["256", null],
  ["-1", null],
  ["exit code -1", null],
  ["exit code 1.5", null],
  ["failed at line 42", null],
  ["E: Sub-process /usr/bin/dpkg returned an error code (1)", null], // dpkg's, not the script's
  ['Unable to install "ha" at line 12', null],
  ["apt-get install -y nginx >/dev/null", null],
  ["sleep 5", null],
  ["Could not connect to 192.168.1.100:8006", null],
  ["node v20.11.1 not supported", null],
  ["Server returned 200.", null],
  ["query returned 0 rows", null],
  ["Main process exited, code=exited, status=1/FAILURE", null], // a service's, not the script's
  ["exit code", null],
  ["Interrupted by user", null], // user words, not a trap's; the category reads them
  ["Terminated by Ctrl+C (SIGINT)", null],
  ["curl: (6) Could not resolve host: github.com", null],
];

describe.each([
  ["client headers", CLIENT_HEADERS],
  ["sentences", SENTENCES],
  ["bare numbers and trap words", BARE_AND_TRAPS],
  ["nothing stated", NOTHING_STATED],
] as const)("parseExitCode: %s", (_label, cases) => {
  test.each(cases.map((c) => [JSON.stringify(c[0]), ...c] as const))("%s", (_name, error, expected) => {
    expect(parseExitCode(error)).toBe(expected);
  });
});
