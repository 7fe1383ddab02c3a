// The response contract of ingestion (docs/protocol.md#the-response-contract): the HTTP status of each storage result
// and of each refusal. Answers and the rejected-reports log (which keeps reason and result) both
// take their status from here.
import type { RejectReason } from "../domain/rejection.ts";
import type { ResultOf } from "../store/contract/store.ts";

type ReportResult = ResultOf["report"]["kind"];

export const RESULT_STATUS = {
  created: 201,
  duplicate: 200,
  updated: 200,
  held: 202,
  "already-final": 409,
} as const satisfies Record<ReportResult, number>;

export const REFUSAL_STATUS = {
  invalid_json: 400,
  invalid_field: 422,
  payload_too_large: 413,
  already_final: 409,
  unknown_path: 404,
} as const satisfies Record<Exclude<RejectReason, "repaired">, number>;

/**
 * What a request logged with `reason` (and, when it was written anyway, `result`) was answered: a
 * repaired body by what its write came to, a /telemetry final report contradicting the stored one
 * as the duplicate it was answered as.
 */
export function statusOf(reason: RejectReason, result: ReportResult | null): number {
  if (result !== null) return RESULT_STATUS[result];
  return reason === "repaired" ? 200 : REFUSAL_STATUS[reason];
}
