// The one error shape every endpoint answers with (docs/protocol.md#the-response-contract).
import { t, type Static } from "elysia";
import { ReadBudgetError, StorageUnavailableError } from "../store/contract/errors.ts";
import type { Logger } from "../log.ts";

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
  | "read_budget_exceeded"
  | "conflict"
  | "tracker_error"
  | "internal";

export function errorBody(error: ErrorCode, message: string, field?: string | null): ErrorBody {
  return field ? { error, message, field } : { error, message };
}

/** A bad parameter of the URL (query string, path), named by `field`: answered 400 invalid_field (error-mapping.ts). */
export class QueryError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** Seconds a client should wait before retrying after a 503. */
export const RETRY_AFTER_SECONDS = 5;

/** An answer to a failure that is not the client's: storage refusing writes (503) or a bug (500). */
export interface ServerFault {
  status: 500 | 503;
  body: ErrorBody;
  headers: Record<string, string>;
}

/** Logs the failure and says how to answer it; no stack trace reaches the client. */
export function serverFault(error: unknown, path: string, log: Logger): ServerFault {
  if (error instanceof StorageUnavailableError) {
    log.error("storage unavailable", { path, error: error.message });
    return {
      status: 503,
      body: errorBody("storage_unavailable", "the database cannot accept writes right now; retry later"),
      headers: { "retry-after": String(RETRY_AFTER_SECONDS) },
    };
  }
  if (error instanceof ReadBudgetError) {
    log.warn("read stopped past its budget", { path, error: error.message });
    return { status: 503, body: errorBody("read_budget_exceeded", error.message), headers: {} };
  }
  log.error("unhandled error", {
    path,
    error: error instanceof Error ? (error.stack ?? error.message) : String(error),
  });
  return { status: 500, body: errorBody("internal", "internal error; see the server log"), headers: {} };
}
