// How a failure becomes an answer: every error leaves in the one shape, {error, message, field}
// (errors.ts), and no stack trace reaches a client. A bad parameter of the URL (query string,
// path) is 400; a bad field of a body is 422; a fault of ours is 500, storage refusing 503.
import type { ErrorHandler } from "elysia";
import type { Server } from "bun";
import type { Logger } from "../log.ts";
import { QueryError, errorBody, serverFault } from "./errors.ts";

export interface ErrorMappingDeps {
  log: Logger;
  /** A POST to no route (a client sending reports to the wrong path): noted before the 404. */
  unknownPost: (request: Request, path: string, server: Server<unknown> | null) => Promise<void>;
}

/** The application's onError handler. */
export function errorMapping({ log, unknownPost }: ErrorMappingDeps): ErrorHandler {
  return async ({ code, error, set, path, request, server }) => {
    set.headers["content-type"] = "application/json";
    if (error instanceof QueryError) {
      set.status = 400;
      return errorBody("invalid_field", error.message, error.field);
    }
    switch (code) {
      case "NOT_FOUND":
        if ((request.method === "GET" || request.method === "HEAD") && path.length > 1 && path.endsWith("/")) {
          // Elysia strips trailing slashes from the routes it hands Bun, so "/openapi/" (as people
          // type it) would be a 404: send them to the path without it.
          const to = path.replace(/\/+$/, "") || "/";
          set.status = 308;
          set.headers.location = to + new URL(request.url).search;
          return errorBody("not_found", `no route for ${path}; see ${to}`);
        }
        set.status = 404;
        if (request.method === "POST") await unknownPost(request, path, server);
        return errorBody(
          "not_found",
          `no route for ${path}${request.method === "POST" ? "; reports go to /telemetry (current scripts) or /upload and /upload/updatestatus (old ones)" : ""}`,
        );
      case "PARSE":
        set.status = 400;
        return errorBody("invalid_json", "body is not valid JSON");
      case "VALIDATION": {
        if (error.type === "response") {
          // Our answer broke its own schema: a bug, not the client's fault.
          const fault = serverFault(error, path, log);
          set.status = fault.status;
          return fault.body;
        }
        const inUrl = error.type === "query" || error.type === "params";
        set.status = inUrl ? 400 : 422;
        const issue = error.valueError;
        const field = issue?.path.replace(/^\//, "").replaceAll("/", ".") || undefined;
        return errorBody(
          "invalid_field",
          issue ? describeIssue(field, issue.schema as SchemaLike, issue.message) : "request does not match the schema",
          field,
        );
      }
      default: {
        if (request.signal.aborted) {
          // The client went away mid-request (an aborted body reads as an error with no text): not a fault of ours.
          log.info("request aborted by the client", { path, method: request.method });
          set.status = 499;
          return errorBody("internal", "request aborted by the client");
        }
        const fault = serverFault(error, path, log);
        set.status = fault.status;
        Object.assign(set.headers, fault.headers);
        return fault.body;
      }
    }
  };
}

interface SchemaLike {
  const?: unknown;
  anyOf?: SchemaLike[];
  enum?: unknown[];
  type?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
}

/** A schema failure in words that name the field and what it accepts ("by must be one of ..."), not "Expected union value". */
function describeIssue(field: string | undefined, schema: SchemaLike | undefined, fallback: string): string {
  const name = field ?? "value";
  const literals = schema?.anyOf?.every((s) => s.const !== undefined)
    ? schema.anyOf.map((s) => String(s.const))
    : schema?.enum?.map(String);
  if (literals) return `${name} must be one of ${literals.join(", ")}`;
  const number =
    schema?.anyOf?.find((s) => s.type === "number" || s.type === "integer") ??
    (schema?.type === "number" || schema?.type === "integer" ? schema : undefined);
  if (number) {
    const range =
      number.minimum !== undefined && number.maximum !== undefined
        ? ` from ${number.minimum} to ${number.maximum}`
        : number.minimum !== undefined
          ? ` of at least ${number.minimum}`
          : number.maximum !== undefined
            ? ` of at most ${number.maximum}`
            : "";
    return `${name} must be a ${number.type === "integer" ? "whole " : ""}number${range}`;
  }
  if (schema?.type === "string" && (schema.minLength !== undefined || schema.maxLength !== undefined))
    return `${name} must be ${schema.minLength ?? 0} to ${schema.maxLength ?? "any number of"} characters`;
  return `${name}: ${fallback}`;
}
