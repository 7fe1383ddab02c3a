// Error categories: why a run did not succeed, in the community client's vocabulary. Current
// clients send one; for reports without one (/upload, older v1) it is derived from the exit
// code and the error text the same way, so old and new data share one breakdown.
import { parseExitCode } from "./exit-codes.ts";
import { outcomeOfFailure, type Outcome } from "./outcome.ts";

/** The community client's categories, in the order breakdowns list them. */
export const ERROR_CATEGORIES = [
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
] as const;
export type ErrorCategory = (typeof ERROR_CATEGORIES)[number];

// The client's exit-code table (core's: it adds 227, and files the declines among the aborts).
// Codes not listed are "unknown".
const CLIENT_TABLE: Record<Exclude<ErrorCategory, "unknown">, readonly number[]> = {
  network: [6, 7, 22, 35],
  config: [10, 128, 203, 204, 205, 206, 207, 208],
  timeout: [28, 124, 211],
  storage: [214, 217, 219, 224],
  dependency: [100, 101, 102, 127, 160, 161, 162, 255],
  permission: [126, 152],
  proxmox: [200, 209, 210, 212, 213, 215, 216, 218, 220, 221, 222, 223, 225, 227, 231],
  service: [150, 151, 153, 154],
  database: [170, 171, 172, 173, 180, 181, 182, 183, 190, 191, 192, 193],
  runtime: [243, 245, 246, 247, 248, 249],
  user_aborted: [113, 114, 122, 129, 130, 143, 253, 254],
  resource: [134, 137],
  signal: [139, 141],
  shell: [1, 2],
};

const BY_CODE: ReadonlyMap<number, ErrorCategory> = new Map(
  Object.entries(CLIENT_TABLE).flatMap(([category, codes]) =>
    codes.map((code) => [code, category as ErrorCategory] as const),
  ),
);

export function categoryOfExitCode(code: number): ErrorCategory {
  return BY_CODE.get(code) ?? "unknown";
}

/**
 * Text rules, first match wins. The first five are the client's own, in its order: it applies
 * them to the install log when the exit code is 1 (a failing command under `set -e`), so an
 * exit-1 text we classify lands where the client would have put it. One deviation: the client
 * matches "DNS" anywhere; we want the word, as old texts are often the failing command itself
 * ("apt-get install -y dnsmasq").
 *
 * The rest are ours, for texts the client's rules leave as shell/unknown, mostly /upload texts
 * without a code. Their order puts the most specific wording first. Not among them: "operation
 * not permitted", which the client's own explanation of exit 1 contains in every header.
 */
const TEXT_RULES: readonly [RegExp, ErrorCategory][] = [
  [
    /E: Unable to|E: Package|E: Failed to fetch|dpkg.*error|broken packages|unmet dependencies|dpkg --configure -a/i,
    "dependency",
  ],
  [/Cannot allocate memory|Out of memory|oom-killer|Killed process|JavaScript heap/i, "resource"],
  [
    /Could not resolve|\bDNS\b|Connection refused|Network is unreachable|No route to host|Temporary failure resolving|Failed to fetch/i,
    "network",
  ],
  [/ENOSPC|no space left on device|Disk quota exceeded|errno -28/i, "storage"],
  [/: command not found|No such file or directory.*\/s?bin\//i, "dependency"],
  // Ours. The legacy traps' words (whole text) are read as exit codes 130/143 before these run.
  [
    /\b(?:sigint|sighup|sigterm|ctrl[-+ ]?c)\b|\b(?:aborted|cancell?ed|interrupted) by (?:the )?user\b|\buser (?:abort|cancel)/i,
    "user_aborted",
  ],
  [/permission denied|\beacces\b|must be (?:run|executed) as root/i, "permission"],
  [/\btimed? ?out\b/i, "timeout"],
  [
    /\bprisma\b|migration\.sql|could not find the migration|\bmigrations? failed|\bsqlite(?:3)?[_ ]?error|\bsqlstate\b|\bpsql: error|\bFATAL: +(?:password authentication|database "|role ")|\bERROR \d{4} \(\w+\)/i,
    "database",
  ],
  [/\bsystemctl\b|\bsystemd\b|\.service\b|\bunit [\w@.-]+ not found/i, "service"],
  [
    /storage '[^']*' does not exist|no such storage|not enough (?:free )?(?:disk )?space|insufficient (?:free )?(?:disk )?space/i,
    "storage",
  ],
  [
    /\b(?:pct|qm) (?:create|start|set|destroy|restore|importdisk|resize)\b|\blxc-start\b|\bpveam\b|\bpvesm\b|unable to create (?:CT|VM)\b|startup for container '?\d+'? failed|\bno quorum\b|cluster not (?:ready|quorate)/i,
    "proxmox",
  ],
  [
    /\bcurl: \(\d+\)|\bwget: |failed to connect to|name resolution|connection reset|tls handshake|ssl certificate problem/i,
    "network",
  ],
  [
    /no matching distribution found|could not find a version that satisfies|\bERESOLVE\b|unable to select packages|has no installation candidate/i,
    "dependency",
  ],
];

// Summary words that only count on the first line: further down, a log may quote any process.
const FIRST_LINE_ONLY: ReadonlySet<ErrorCategory> = new Set(["user_aborted"]);

function categoryOfText(error: string): ErrorCategory | null {
  const firstLine = error.split("\n", 1)[0]!;
  for (const [pattern, category] of TEXT_RULES) {
    if (pattern.test(FIRST_LINE_ONLY.has(category) ? firstLine : error)) return category;
  }
  return null;
}

export interface FailureFacts {
  /** The exit code field; when null, the code the error text states is used. */
  exitCode: number | null;
  error: string | null;
  /** Defaults to failed. */
  outcome?: Outcome;
}

/**
 * The category of a run whose client sent none. Order, and why:
 * 1. The outcome: success and progress have none (the client sends none there either); an
 *    abort is user_aborted (the client's override for aborts); unknown with neither code nor
 *    text has nothing to classify (e.g. a stuck install).
 * 2. The exit code's table category, when it has one and the code is not 1: the client itself
 *    trusts its table first.
 * 3. Text rules (exit 1, 0, codes the table does not know, or no code): exit 1 is any failing
 *    command, and the client reads its log to tell why; the same text rules then classify old
 *    texts that state no code.
 * 4. The table category after all (shell for 1), else unknown.
 */
export function deriveCategory({ exitCode, error, outcome = "failed" }: FailureFacts): ErrorCategory | null {
  if (outcome === "success" || outcome === "in_progress") return null;
  if (outcome === "aborted") return "user_aborted";
  const code = exitCode ?? parseExitCode(error);
  if (outcome === "unknown" && code === null && error === null) return null;
  const byCode = code === null ? "unknown" : categoryOfExitCode(code);
  if (byCode !== "unknown" && code !== 1) return byCode;
  return (error === null ? null : categoryOfText(error)) ?? byCode;
}

// The reference server's extra words, mapped onto the client's list.
const SERVER_WORDS: ReadonlyMap<string, ErrorCategory> = new Map([
  ["apt", "dependency"], // its name for the client's 100-102/255 (dependency)
  ["command_not_found", "dependency"], // its name for 127, which the client files as dependency
  ["build", "service"], // its name for 153/154 (build, node-gyp), which the client files as service
  ["preflight", "config"], // its name for 103-108: the host or its settings do not fit
]);

/** A client-sent category on our list: kept (lowercased); a reference-server word: mapped; else unknown. */
export function normalizeCategory(text: string | null): ErrorCategory | null {
  if (text === null) return null;
  const word = text
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, "_");
  if (word === "") return null;
  if ((ERROR_CATEGORIES as readonly string[]).includes(word)) return word as ErrorCategory;
  return SERVER_WORDS.get(word) ?? "unknown";
}

/**
 * One meaning for an ending, whatever sent it (outcome.ts outcomeOfFailure): a failure that ended
 * with a user's abort code is an abort by the user, category user_aborted; one that ended with a
 * code raised before the script ran is blocked, its category kept. Applied to every report as it
 * is normalized, to reports held from before the rule, and (migrations) to the executions stored
 * before it.
 */
export function byExitCode<T extends { outcome: Outcome; exitCode: number | null; errorCategory: string | null }>(
  ending: T,
): T {
  const outcome = outcomeOfFailure(ending.outcome, ending.exitCode);
  if (outcome === ending.outcome) return ending;
  return outcome === "aborted" ? { ...ending, outcome, errorCategory: "user_aborted" } : { ...ending, outcome };
}

/** The category to store: none without a failure, else the client's when it sent one, else derived. */
export function categoryFor(r: {
  clientCategory: string | null;
  exitCode: number | null;
  error: string | null;
  outcome: Outcome;
}): ErrorCategory | null {
  if (r.outcome === "success" || r.outcome === "in_progress") return null;
  return normalizeCategory(r.clientCategory) ?? deriveCategory(r);
}
