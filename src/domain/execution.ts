// One execution (one attempt at an installation) as it is stored and read (docs/protocol.md#the-record
// and 3b), and the report that each request makes of it. An install (random_id) is the executions
// that share its id. Every storage engine's schema is checked against `Execution` at compile time.
import { KINDS, fieldsOf, type PartValues } from "./fields.ts";

export { INSTALL_TYPES, KINDS, MAX_RANDOM_ID_LENGTH } from "./fields.ts";
export type Kind = (typeof KINDS)[number];

export function kindOfType(type: string): Kind {
  if (type === "pve" || type === "tool") return "tool";
  if (type === "addon") return "addon";
  return "install";
}

/**
 * What a client tells about the machine and the script (domain/fields.ts, part "fields"): every
 * report of /telemetry carries them all. `extra`: fields the server does not know (a newer
 * client's), as a JSON object; null when none.
 */
export type Descriptive = PartValues<"fields">;

const DESCRIPTIVE_KEYS = fieldsOf("fields").map((f) => f.key);

/** Nothing described (an /upload status update's): every descriptive field null, the required type "". */
export const UNDESCRIBED: Readonly<Descriptive> = Object.freeze(
  Object.fromEntries(fieldsOf("fields").map((f) => [f.key, "required" in f ? "" : null])) as Descriptive,
);

/** The descriptive fields of an execution, and nothing else of it (a report's `fields`). */
export function descriptiveOf(e: Descriptive): Descriptive {
  return Object.fromEntries(DESCRIPTIVE_KEYS.map((k) => [k, e[k]])) as Descriptive;
}

/**
 * How a run ended, as far as it is known (part "ending"): the client's category, else one derived
 * from exit code and error text (error-category.ts); install_duration in seconds, as the client
 * measured them.
 */
export type Ending = PartValues<"ending">;

/**
 * One execution as stored: the report's head, descriptive fields and ending, and what the server
 * adds (attempt, kind, times, duration, repaired; domain/fields.ts has each one's meaning).
 */
export type Execution = PartValues<"head"> & Descriptive & Ending & PartValues<"server">;

/**
 * What one request says about one execution. A /upload status update says only how it ended
 * (`fields` null); every other report carries the descriptive fields too.
 */
export type Report = PartValues<"head"> & Ending & { fields: Descriptive | null };
