// One pipeline from the bytes of a request body to a write, shared by the routes and by replay:
// parse (lenient JSON) -> check and normalize the fields of the endpoint's protocol -> the write
// op. A body that fails a step becomes a rejection with the step's reason; the caller logs it.
import { MAX_RANDOM_ID_LENGTH, type Report } from "../domain/execution.ts";
import type { JsonObject } from "../domain/json.ts";
import {
  normalizeStart,
  normalizeTelemetry,
  normalizeUpdate,
  type Checked,
  type NormalizeOptions,
} from "../domain/normalize.ts";
import type { Endpoint, Rejection } from "../domain/rejection.ts";
import type { ReportWrite } from "../store/contract/executions.ts";
import { parseLenientJson } from "./lenient-json.ts";

/** The report write a body becomes. */
export type ReportOp = Extract<ReportWrite, { kind: "report" }>;

export type Intake =
  | { ok: true; op: ReportOp }
  | { ok: false; rejection: Rejection & { reason: "invalid_json" | "invalid_field" } };

/** The random_id of a body that failed its field rules, when it has a usable one: the log keeps it, so deletion requests find it. */
const guessId = (body: JsonObject): string | null =>
  typeof body.random_id === "string" ? body.random_id.slice(0, MAX_RANDOM_ID_LENGTH) : null;

const FIELD_RULES: Record<Endpoint, (body: JsonObject, o: NormalizeOptions) => Checked<Report>> = {
  upload: normalizeStart,
  updatestatus: normalizeUpdate,
  telemetry: normalizeTelemetry,
};

export function intake(endpoint: Endpoint, raw: Uint8Array, at: number, normalize: NormalizeOptions): Intake {
  const parsed = parseLenientJson(raw);
  if (!parsed.ok)
    return {
      ok: false,
      rejection: { endpoint, reason: "invalid_json", field: null, message: parsed.message, randomId: null, body: raw },
    };
  const checked = FIELD_RULES[endpoint](parsed.value, normalize);
  if (!checked.ok) {
    return {
      ok: false,
      rejection: {
        endpoint,
        reason: "invalid_field",
        field: checked.field,
        message: checked.message,
        randomId: guessId(parsed.value),
        body: raw,
      },
    };
  }
  return { ok: true, op: { kind: "report", report: checked.value, endpoint, raw, repairs: parsed.repairs, at } };
}
