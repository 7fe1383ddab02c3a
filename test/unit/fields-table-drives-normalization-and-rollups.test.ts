// The fields table (src/domain/fields.ts) holds together, and what is derived from it does what
// each row says: normalization reads every descriptive field by its kind and bounds, rollups count
// every dimension field by its value as stored, body positions and filter parameters are in order.
import { describe, expect, test } from "bun:test";
import { FIELDS, FILTER_FIELDS, WIRE_KEYS } from "../../src/domain/fields.ts";
import { normalizeStart, normalizeTelemetry } from "../../src/domain/normalize.ts";
import { DIMENSIONS, addRecord, emptyData } from "../../src/domain/rollup.ts";
import type { JsonObject } from "../../src/domain/json.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { ENDPOINTS } from "../../src/domain/rejection.ts";
import { execution } from "../helpers/reports.ts";

const OPTS = { maxFieldLength: 128, maxErrorLength: 131_072, maskIps: true };

/** The rows as plain data, every property optional: what a test reads of them. */
interface Row {
  name: string;
  key: string;
  part: string;
  kind: string;
  required?: true;
  bounds?: readonly [number, number];
  unit?: string;
  values?: readonly string[];
  wire?: string;
  alias?: string;
  sent?: Partial<Record<string, number>>;
  versions?: string;
  dimension?: true;
}
const ROWS: readonly Row[] = FIELDS;
const wire = (f: Row) => f.wire ?? f.name;

describe("the table", () => {
  test("names and keys are unique", () => {
    expect(new Set(ROWS.map((f) => f.name)).size).toBe(ROWS.length);
    expect(new Set(ROWS.map((f) => f.key)).size).toBe(ROWS.length);
  });

  test.each(ENDPOINTS)(
    "%s: one body key per position; rows sharing one are of different payload versions",
    (endpoint) => {
      const sent = ROWS.filter((f) => f.sent?.[endpoint] !== undefined);
      for (const f of sent) {
        const same = sent.filter((g) => g.sent![endpoint] === f.sent![endpoint]);
        expect(new Set(same.map(wire)).size, `${f.name}: its position is another body key's`).toBe(1);
        if (same.length > 1) expect(new Set(same.map((g) => g.versions ?? "every")).size).toBe(same.length);
        // normalize.ts reads a key that rows of different versions share once, as a word.
        if (same.length > 1) expect(same.map((g) => g.kind)).toEqual(same.map(() => "word"));
      }
    },
  );

  test("filter parameters are numbered 1 to n", () => {
    expect(FILTER_FIELDS.map((f): number => f.filter.at)).toEqual(FILTER_FIELDS.map((_, i) => i + 1));
  });

  test("numbers and ids read from bodies have bounds, sizes a unit, enums their values; fields but the server's are sent", () => {
    for (const f of ROWS) {
      if (f.kind === "integer" || f.kind === "size" || f.kind === "id")
        expect(f.bounds !== undefined, f.name).toBe(f.part !== "server");
      if (f.kind === "size") expect(f.unit, f.name).toBeDefined();
      if (f.kind === "enum") expect(f.values, f.name).toBeDefined();
      // outcome is derived from status, extra holds what no row names.
      if (f.part !== "server" && f.name !== "outcome" && f.name !== "extra") expect(f.sent, f.name).toBeDefined();
    }
  });

  test("every body key is known; a record's names that no body carries are not", () => {
    for (const f of ROWS) if (f.sent) expect(WIRE_KEYS.has(wire(f))).toBe(true);
    expect(WIRE_KEYS.has("host_gpu")).toBe(false); // v1 sends it as gpu_passthrough
    expect(WIRE_KEYS.has("host_version")).toBe(true); // pve_version's alias
  });
});

/** A value of each kind, as sent and as stored. */
function sample(f: Row): [sent: string, stored: unknown] {
  switch (f.kind) {
    case "install-type":
      return ["VM", "vm"];
    case "label":
      return ["  Some\tValue ", "Some Value"];
    case "label-lower":
      return [" Some Value ", "some value"];
    case "word":
      return ["Yes", "yes"];
    case "integer":
    case "size":
      return [String(f.bounds![1]), f.bounds![1]];
    case "bool":
      return ["yes", true];
    default:
      throw new Error(`no sample of ${f.kind}`);
  }
}

describe("normalization reads every descriptive field as its row says", () => {
  const descriptive = ROWS.filter((f) => f.part === "fields" && f.kind !== "json");
  test.each(descriptive.map((f) => [f.name, f] as const))("%s", (_, f) => {
    const [sent, stored] = sample(f);
    const body: JsonObject = {
      payload_version: f.versions === "v1" ? 1 : 2,
      random_id: "r",
      type: "lxc",
      status: "installing",
      [wire(f)]: sent,
    };
    const r = normalizeTelemetry(body, OPTS);
    if (!r.ok) throw new Error(r.message);
    const fields = r.value.fields as unknown as Record<string, unknown>;
    expect(fields[f.key]).toEqual(stored);
    expect(fields.extra).toBeNull();
    // The rows of other payload versions read nothing from the same key.
    for (const other of descriptive)
      if (other !== f && other.sent && wire(other) === wire(f)) expect(fields[other.key]).toBeNull();
    if (f.bounds) {
      const over = normalizeTelemetry({ ...body, [wire(f)]: f.bounds[1] + 1 }, OPTS);
      expect(over.ok ? null : over.field).toBe(wire(f));
    }
    if (f.alias) {
      const aliased = normalizeStart({ random_id: "r", type: "lxc", [f.alias]: sent }, OPTS);
      expect(
        aliased.ok ? (aliased.value.fields as unknown as Record<string, unknown>)[f.key] : aliased.message,
      ).toEqual(stored);
    }
  });
});

describe("rollups count every dimension field by its value as stored", () => {
  const dimensions = ROWS.filter((f) => f.dimension);
  test("each is a dimension", () => {
    expect(dimensions.filter((f) => !(DIMENSIONS as readonly string[]).includes(f.name))).toEqual([]);
  });
  test.each(dimensions.map((f) => [f.name, f] as const))("%s", (_, f) => {
    const value = f.kind === "integer" || f.kind === "size" ? 7 : `v-${f.name}`;
    const r = execution("r", { [f.key]: value } as Partial<Execution>);
    const d = emptyData();
    addRecord(d, r, r.outcome, 1, true, null);
    expect(Object.keys((d.dims as Record<string, object>)[f.name] ?? {})).toEqual([String(value)]);
  });
});
