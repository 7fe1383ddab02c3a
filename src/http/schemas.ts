// Elysia schemas shared by several route modules, built from the domain's lists.
import { t } from "elysia";
import { OUTCOMES } from "../domain/outcome.ts";

export const OutcomeSchema = t.Union(
  OUTCOMES.map((o) => t.Literal(o)),
  { description: "derived from status: success (done), failed, aborted (user interrupt), in_progress, unknown" },
);
