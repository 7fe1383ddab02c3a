// An install's outcome, derived from the status its client sent (and, for failures, the error text).

/** Every outcome, in the order counts are kept (rollups index them so). */
export const OUTCOMES = ["success", "failed", "aborted", "in_progress", "unknown"] as const;
export type Outcome = (typeof OUTCOMES)[number];

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
// status "failed" with error "INTERRUPTED"; exit code 130 is bash's code for SIGINT.
// TERMINATED (SIGTERM) stays a failure: it is as often a host shutdown or a timeout.
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
