// The rejected-reports log: every request not applied exactly as sent is kept raw with its reason.

/** The ingestion endpoints a report can arrive at. */
export const ENDPOINTS = ["upload", "updatestatus", "telemetry"] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

export const REJECT_REASONS = ["invalid_json", "invalid_field", "already_final", "repaired", "payload_too_large"] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

/** A refused or repaired request, as the log keeps it. */
export interface Rejection {
  endpoint: Endpoint;
  reason: RejectReason;
  field: string | null;
  message: string;
  randomId: string | null;
  body: Uint8Array;
}
