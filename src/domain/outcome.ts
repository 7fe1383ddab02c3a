// An install's outcome, derived from the status its client sent (and, for failures, the error text
// and the exit code: docs/decisions/2026-11-27-blocked-adopted.md).

/**
 * Every outcome, in the order counts are kept (rollups index them so, SQLite stores the index):
 * blocked came last, so stored indexes kept their meaning. Pages list them in OUTCOME_ORDER.
 */
export const OUTCOMES = ["success", "failed", "aborted", "in_progress", "unknown", "blocked"] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** The order a reader sees them in: the community's (success, failed, blocked, aborted, unfinished), then unknown. */
export const OUTCOME_ORDER: readonly Outcome[] = ["success", "failed", "blocked", "aborted", "in_progress", "unknown"];

/**
 * Exit codes the engine raises when the person at the keyboard said no, or stopped the run: 113,
 * 114, 122 and 254 answer a question it asked (too small, too little storage, no internet, a
 * prompt), 253 an update whose data migration the user declined, 129/130/143 a hang-up, Ctrl-C or
 * a kill (SIGHUP, SIGINT, SIGTERM). The community service's list, read at d10f1897.
 */
export const USER_ABORT_EXIT_CODES: ReadonlySet<number> = new Set([113, 114, 122, 129, 130, 143, 253, 254]);

/**
 * Exit codes raised before the application's own script ran: the host would not, or could not,
 * provide a working container (validation 103-108, Proxmox set-up 109-111, bring-up 116-121 and
 * 123, the Proxmox block 200 and 203-227, 231). The community service's list, read at d10f1897.
 */
export const BLOCKED_EXIT_CODES: ReadonlySet<number> = new Set([
  103, 104, 105, 106, 107, 108, 109, 110, 111, 116, 117, 118, 119, 120, 121, 123, 200, 203, 204, 205, 206, 207, 208,
  209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 231,
]);

/**
 * How a failure's exit code reclassifies it, the community's rule: a user's abort code makes it an
 * abort, a code raised before the script ran makes it blocked; any other outcome (an abort or an
 * unknown ending the client named, a success, a run in progress) is taken at its word.
 */
export function outcomeOfFailure(outcome: Outcome, exitCode: number | null): Outcome {
  if (outcome !== "failed" || exitCode === null) return outcome;
  if (USER_ABORT_EXIT_CODES.has(exitCode)) return "aborted";
  if (BLOCKED_EXIT_CODES.has(exitCode)) return "blocked";
  return "failed";
}

const SUCCESS = new Set(["done", "success", "succeeded", "successful", "completed", "complete", "ok"]);
const FAILED = new Set(["failed", "failure", "fail", "error", "errored"]);
const ABORTED = new Set(["aborted", "abort", "cancelled", "canceled", "interrupted"]);
const IN_PROGRESS = new Set([
  "installing",
  "validation",
  "validating",
  "started",
  "starting",
  "running",
  "pending",
  "configuring",
  "downloading",
  "updating",
  "in_progress",
  "in progress",
  "building",
]);

// A failure caused by the user pressing Ctrl-C: the reference client reports it as
// status "failed" with error "INTERRUPTED"; exit code 130 is bash's code for SIGINT. (A code the
// text states, TERMINATED's 143 among them, is read by outcomeOfFailure once it is parsed.)
const USER_INTERRUPT =
  /^\s*(interrupted|sigint\b|130\s*$|aborted by user|cancell?ed by user|user (abort|cancel)|(script )?terminated by (user|ctrl[-+ ]?c)|(exit(ed)?( with)?( (code|status))?|code|status)\s*:?\s*130\b)/i;

export function deriveOutcome(status: string, error: string | null): Outcome {
  if (SUCCESS.has(status)) return "success";
  if (ABORTED.has(status)) return "aborted";
  if (FAILED.has(status)) return error !== null && USER_INTERRUPT.test(error) ? "aborted" : "failed";
  if (IN_PROGRESS.has(status)) return "in_progress";
  return "unknown";
}

export const isFinal = (outcome: Outcome): boolean => outcome !== "in_progress";

/** Whether a run ended for a reason worth fixing: failed, or blocked by its host (error panels, signatures). */
export const isFailure = (outcome: Outcome): boolean => outcome === "failed" || outcome === "blocked";
