// Held reports on SQLite: rows from before the budgets (migration 0009) carry no cost; what they
// count is estimated as the shared rules count a new one (../common/budgets.ts encodeHeld).
import { ROW_BYTES } from "../common/budgets.ts";

/** What a row without a cost (older than the budgets) counts: the same estimate, in SQL. */
export const LEGACY_HELD_COST = `${ROW_BYTES} + length("report") + length("execution_id") + length("random_id")`;
