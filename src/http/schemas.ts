// Elysia schemas shared by several route modules, built from the domain's lists.
import { t } from "elysia";
import type { TLiteral, TUnion } from "@sinclair/typebox";
import { OUTCOMES } from "../domain/outcome.ts";

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };

/**
 * A union of string literals from a domain list, typed member by member. (t.UnionEnum types it
 * too, but with it Elysia's validation lost every outcome but the first in a test.)
 */
export function literalUnion<const T extends readonly string[]>(
  values: T,
  options: { description: string },
): TUnion<Literals<T>> {
  return t.Union(
    values.map((v) => t.Literal(v)),
    options,
  ) as TUnion<Literals<T>>;
}

export const OutcomeSchema = literalUnion(OUTCOMES, {
  description:
    "derived from status and exit code: success (done), failed, blocked (by the host, before the script ran), aborted (by the user), in_progress, unknown",
});
