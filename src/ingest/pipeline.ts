// One pipeline from the bytes of a request body to a write, shared by the routes and by replay:
// parse (lenient JSON) -> check and normalize the fields -> the write op. A body that fails a
// step becomes a rejection with the step's reason; the caller logs it and answers.
import type { JsonObject } from "../domain/json.ts";
import { normalizeStart, normalizeUpdate, type Checked, type NormalizeOptions } from "../domain/normalize.ts";
import { MAX_RANDOM_ID_LENGTH, type StartReport, type StatusUpdate } from "../domain/install.ts";
import type { Endpoint, Rejection } from "../domain/rejection.ts";
import type { ReportWrite } from "../store/contract.ts";
import { parseLenientJson } from "./lenient-json.ts";

/** The report writes a body can become. */
export type ReportOp = Extract<ReportWrite, { kind: "start" | "update" }>;

export type Intake = { ok: true; op: ReportOp } | { ok: false; rejection: Rejection & { reason: "invalid_json" | "invalid_field" } };

/** The random_id of a body that failed its field rules, when it has a usable one: the log keeps it, so deletion requests find it. */
const guessId = (body: JsonObject): string | null => (typeof body.random_id === "string" ? body.random_id.slice(0, MAX_RANDOM_ID_LENGTH) : null);

/** The field rules of the endpoint's report kind. */
function checkFields(endpoint: Endpoint, body: JsonObject, o: NormalizeOptions): Checked<{ kind: "start"; report: StartReport } | { kind: "update"; update: StatusUpdate }> {
  if (endpoint === "upload") {
    const start = normalizeStart(body, o);
    return start.ok ? { ok: true, value: { kind: "start", report: start.value } } : start;
  }
  const update = normalizeUpdate(body, o);
  return update.ok ? { ok: true, value: { kind: "update", update: update.value } } : update;
}

export function intake(endpoint: Endpoint, raw: Uint8Array, at: number, normalize: NormalizeOptions): Intake {
  const parsed = parseLenientJson(raw);
  if (!parsed.ok) return { ok: false, rejection: { endpoint, reason: "invalid_json", field: null, message: parsed.message, randomId: null, body: raw } };
  const checked = checkFields(endpoint, parsed.value, normalize);
  if (!checked.ok) {
    return { ok: false, rejection: { endpoint, reason: "invalid_field", field: checked.field, message: checked.message, randomId: guessId(parsed.value), body: raw } };
  }
  return { ok: true, op: { ...checked.value, endpoint, raw, repairs: parsed.repairs, at } };
}
