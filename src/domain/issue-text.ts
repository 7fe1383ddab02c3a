// The issue opened in a script collection's tracker from an error signature: its title and
// Markdown body, made from what installstats knows of the signature. Pure: facts in, text out.
//
// Every value in it came from an anonymous client, so none may act in the tracker: values are
// inline code (no @mention pings anyone, no #123 links another issue, no Markdown breaks the
// table), the sample error is a fenced block longer than any run of backticks inside it, and the
// sample is masked beyond what ingestion masked (addresses, e-mails, credentials, tokens).
import { maskIpAddresses } from "./mask-ips.ts";
import { explainExitCode } from "./exit-codes.ts";

/** The marker that finds the issue of a signature again, in the tracker's search and in its body. */
export const issueMarker = (signatureId: string): string => `installstats-signature: ${signatureId}`;

/**
 * Whether an issue's text names the signature (a search's hits are checked with it: searches match
 * loosely). The id as a whole word, in the marker or the visible line: 16 hex digits do not occur
 * by chance, and an issue whose marker comment was edited away is still found by the visible id.
 */
export const carriesMarker = (text: string | null | undefined, signatureId: string): boolean =>
  new RegExp(`(?<![0-9a-f])${signatureId}(?![0-9a-f])`).test(text ?? "");

/** A value and how often it was seen. */
export type Tally = readonly [value: string | null, count: number];

export interface IssueFacts {
  signature: { id: string; text: string | null; firstSeen: number; lastSeen: number; apps: readonly string[] };
  /** What the counts cover: the dashboard's app filter (if any), and the window. */
  scope: { app: string | null; from: number; to: number };
  /** Failures with this signature in the window, and all failures in it. */
  failed: number;
  failedInScope: number;
  /** The failures read for the spread (the newest first), and how many of them had the signature. */
  sample: {
    read: number;
    matched: number;
    apps: readonly Tally[];
    exitCodes: readonly (readonly [code: number | null, category: string | null, count: number])[];
    pve: readonly Tally[];
    os: readonly Tally[];
    kernel: readonly Tally[];
    /** The newest failure's error text, as stored (masked again here). */
    error: string | null;
  };
  /** The scope's failure drivers (GET /api/stats/drivers), strongest first. */
  drivers: readonly {
    dimension: string;
    value: string;
    shareOfFailed: number;
    shareOfRuns: number;
    failureRate: number;
    elsewhereRate: number;
  }[];
  /** Where the signature's failures are listed in the dashboard; null when the address is not known. */
  dashboardUrl: string | null;
}

const MAX_TITLE = 200;
/** The sample keeps the head of the error: the client's summary line and the first log lines. */
const SAMPLE_LINES = 60;
const SAMPLE_CHARS = 4000;

// Credentials in URLs, key=value secrets, bearer tokens, e-mail and MAC addresses, home directories.
const MASKS: [RegExp, string][] = [
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+(?::[^\s/@]*)?@/gi, "$1<credentials>@"],
  [/\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, "$1 <masked>"],
  [
    /\b((?:api[_-]?)?(?:key|token|secret|password|passwd|pass|pwd|auth))(\s*[=:]\s*)("[^"]*"|'[^']*'|\S+)/gi,
    "$1$2<masked>",
  ],
  [/\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b/g, "<email>"],
  [/\b(?:[0-9a-f]{2}[:-]){5}[0-9a-f]{2}\b/gi, "<mac>"],
  [/\/home\/[^/\s]+/g, "/home/<user>"],
];

/** The error as shown in an issue: its head, IP addresses and the other personal or secret parts masked. */
export function maskSample(error: string): string {
  let text = error.split("\n").slice(0, SAMPLE_LINES).join("\n");
  if (text.length > SAMPLE_CHARS) text = `${text.slice(0, SAMPLE_CHARS)}\n[…]`;
  text = maskIpAddresses(text);
  for (const [pattern, replacement] of MASKS) text = text.replace(pattern, replacement);
  return text;
}

/** Inline code that no content can break out of (a backtick run longer than any inside). */
function code(value: string): string {
  const flat = value.replace(/[\r\n]+/g, " ");
  const longest = Math.max(0, ...(flat.match(/`+/g) ?? []).map((r) => r.length));
  const fence = "`".repeat(longest + 1);
  const pad = flat.startsWith("`") || flat.endsWith("`") || flat.trim() === "" ? " " : "";
  // A table cell ends at a bare pipe, even inside code.
  return `${fence}${pad}${flat.replaceAll("|", "\\|")}${pad}${fence}`;
}

/** A fenced block that no content can close early. */
function block(text: string): string {
  const longest = Math.max(0, ...(text.match(/`{3,}/g) ?? []).map((r) => r.length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return `${fence}text\n${text}\n${fence}`;
}

const tally = (items: readonly Tally[], empty = "–"): string =>
  items.length === 0
    ? empty
    : items.map(([v, n]) => `${v === null || v === "" ? "(not reported)" : code(v)} × ${n}`).join(", ");

const pct = (x: number): string => `${Math.round(x * 100)}%`;
const day = (t: number): string => new Date(t).toISOString().slice(0, 10);
const instant = (t: number): string => `${new Date(t).toISOString().slice(0, 16).replace("T", " ")} UTC`;

/** The exit code the most failures ended with, if it was reported. */
const mainCode = (f: IssueFacts): number | null => f.sample.exitCodes.find(([c]) => c !== null)?.[0] ?? null;

function subject(f: IssueFacts): string {
  if (f.scope.app !== null) return f.scope.app;
  const apps = f.sample.apps.filter(([a]) => a !== null && a !== "").map(([a]) => a!);
  const names = apps.length > 0 ? apps : [...f.signature.apps];
  if (names.length === 0) return "(no app)";
  return names.length <= 2 ? names.join(", ") : `${names.slice(0, 2).join(", ")} and ${names.length - 2} more`;
}

export function issueTitle(f: IssueFacts): string {
  const c = mainCode(f);
  const what =
    c !== null ? `exit ${c}, ${explainExitCode(c)}` : maskSample((f.signature.text ?? "failure").slice(0, 100));
  const title = `${subject(f)}: ${what}`.replace(/\s+/g, " ").trim();
  return title.length > MAX_TITLE ? `${title.slice(0, MAX_TITLE - 1)}…` : title;
}

export function issueBody(f: IssueFacts): string {
  const s = f.sample;
  const share = f.failedInScope === 0 ? "" : ` of ${f.failedInScope} (${pct(f.failed / f.failedInScope)})`;
  const codes =
    s.exitCodes.length === 0
      ? "–"
      : s.exitCodes
          .map(([c, cat, n]) =>
            c === null ? `(not reported) × ${n}` : `${c} ${explainExitCode(c)}${cat ? ` [${cat}]` : ""} × ${n}`,
          )
          .join("; ");
  const rows: [string, string][] = [
    ["App", f.scope.app !== null ? code(f.scope.app) : tally(s.apps, f.signature.apps.map(code).join(", ") || "–")],
    ["Exit code (category)", codes],
    [
      "Failures with this signature",
      `${f.failed}${share} failures ${f.scope.app !== null ? `of ${code(f.scope.app)} ` : ""}from ${day(f.scope.from)} to ${day(f.scope.to - 1)}`,
    ],
    ["First / last seen", `${instant(f.signature.firstSeen)} / ${instant(f.signature.lastSeen)}`],
    [
      "Apps ever failing with it",
      f.signature.apps.length === 0
        ? "–"
        : f.signature.apps.slice(0, 10).map(code).join(", ") +
          (f.signature.apps.length > 10 ? ` and ${f.signature.apps.length - 10} more` : ""),
    ],
    ["PVE version", tally(s.pve)],
    ["OS", tally(s.os)],
    ["Kernel", tally(s.kernel)],
  ];
  const parts = [
    "Failures reported to installstats (anonymous installation telemetry) share this error signature:",
    "",
    block(f.signature.text === null ? "(no signature text)" : maskSample(f.signature.text)),
    "",
    "| | |",
    "|---|---|",
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
    "",
    s.matched === 0
      ? `_No failure with this signature among the newest ${s.read} failures of the window: the spread above is empty._`
      : `_Exit codes, apps, PVE, OS and kernel: of the ${s.matched} failures with this signature among the newest ${s.read} failures of the window._`,
  ];
  if (f.drivers.length > 0) {
    parts.push(
      "",
      `### Why runs ${f.scope.app !== null ? `of ${code(f.scope.app)} ` : ""}fail`,
      "",
      "Values over-represented among all failures of the window (not only this signature's):",
      "",
    );
    for (const d of f.drivers) {
      parts.push(
        `- ${pct(d.shareOfFailed)} of failures on ${d.dimension} ${code(d.value)}, which carries ${pct(d.shareOfRuns)} of the runs (fails ${pct(d.failureRate)} of the time, ${pct(d.elsewhereRate)} elsewhere)`,
      );
    }
  }
  if (s.error !== null) parts.push("", "### Sample error (newest, masked)", "", block(maskSample(s.error)));
  parts.push(
    "",
    `Signature ${code(f.signature.id)}${f.dashboardUrl ? ` · [its failures in the dashboard](${f.dashboardUrl})` : ""}`,
    `<!-- ${issueMarker(f.signature.id)} -->`,
  );
  return parts.join("\n");
}

/** An edited body keeps the marker, so the issue is found again whatever the admin changed. */
export function withMarker(body: string, signatureId: string): string {
  return body.includes(issueMarker(signatureId)) ? body : `${body.trimEnd()}\n\n<!-- ${issueMarker(signatureId)} -->`;
}
