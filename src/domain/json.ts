/** A parsed JSON object body, its values not yet checked. */
export type JsonObject = Record<string, unknown>;
