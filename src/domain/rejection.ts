// The rejected-reports log: every request not applied exactly as sent is kept raw with its reason.

/** The ingestion endpoints a report can arrive at. */
export const ENDPOINTS = ["upload", "updatestatus", "telemetry"] as const;
export type Endpoint = (typeof ENDPOINTS)[number];
export const isEndpoint = (where: string): where is Endpoint => (ENDPOINTS as readonly string[]).includes(where);

/** Where a logged request arrived: an ingestion endpoint, or a path the service does not know (a script pointed at a wrong URL). */
export const LOGGED_AT = [...ENDPOINTS, "unknown_path"] as const;
type LoggedAt = (typeof LOGGED_AT)[number];

export const REJECT_REASONS = [
  "invalid_json",
  "invalid_field",
  "already_final",
  "repaired",
  "payload_too_large",
  "unknown_path",
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

/** A refused or repaired request, as the log keeps it. */
export interface Rejection {
  endpoint: LoggedAt;
  reason: RejectReason;
  field: string | null;
  message: string;
  randomId: string | null;
  body: Uint8Array;
}
