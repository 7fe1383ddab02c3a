// The one error shape every endpoint answers with (DESIGN.md section 2).
import { t, type Static } from "elysia";

export const ErrorBody = t.Object(
  {
    error: t.String({ description: "machine-readable code, e.g. invalid_json, invalid_field, not_found" }),
    message: t.String({ description: "what is wrong, for a human" }),
    field: t.Optional(t.String({ description: "the field at fault, when there is one" })),
  },
  { title: "Error" },
);
export type ErrorBody = Static<typeof ErrorBody>;

export type ErrorCode =
  | "invalid_json"
  | "invalid_field"
  | "already_final"
  | "payload_too_large"
  | "not_found"
  | "unauthorized"
  | "forbidden"
  | "rate_limited"
  | "storage_unavailable"
  | "internal";

export function errorBody(error: ErrorCode, message: string, field?: string | null): ErrorBody {
  return field ? { error, message, field } : { error, message };
}

/** Seconds a client should wait before retrying after a 503. */
export const RETRY_AFTER_SECONDS = 5;
