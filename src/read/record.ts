// The record as every read API returns it (docs/protocol.md#the-record): one execution, every field
// of domain/fields.ts in its order, the instants of the timeline grouped under `timeline`.
import type {
  TBoolean,
  TInteger,
  TLiteral,
  TNull,
  TNumber,
  TObject,
  TRecord,
  TSchema,
  TString,
  TUnion,
  TUnknown,
} from "@sinclair/typebox";
import { t, type Static } from "elysia";
import type { Execution } from "../domain/execution.ts";
import { FIELDS, type Field } from "../domain/fields.ts";
import { literalUnion } from "../http/schemas.ts";

type Nullable<R, S extends TSchema> = R extends { required: true } ? S : TUnion<[S, TNull]>;
/** The schema of one field in the record, by its kind. */
type SchemaOf<R> = R extends { kind: "enum"; values: infer V extends readonly string[] }
  ? TUnion<{ -readonly [K in keyof V]: TLiteral<V[K]> }>
  : R extends { kind: "integer" } | { kind: "size"; whole: true }
    ? Nullable<R, TInteger>
    : R extends { kind: "size" | "ms" }
      ? Nullable<R, TNumber>
      : R extends { kind: "bool" }
        ? Nullable<R, TBoolean>
        : R extends { kind: "json" }
          ? TUnion<[TRecord<TString, TUnknown>, TNull]>
          : Nullable<R, TString>;
type InTimeline = Extract<Field, { timeline: string }>;
type RecordProperties = { [R in Exclude<Field, InTimeline> as R["name"]]: SchemaOf<R> } & {
  timeline: TObject<{ [R in InTimeline as R["timeline"]]: SchemaOf<R> }>;
};

function schemaOf(f: Field): TSchema {
  const description = f.doc;
  let s: TSchema;
  switch (f.kind) {
    case "enum":
      return literalUnion(f.values, { description });
    case "json":
      return t.Nullable(t.Record(t.String(), t.Unknown(), { description }));
    case "integer":
      s = t.Integer({ description });
      break;
    case "size":
      s = "whole" in f ? t.Integer({ description }) : t.Number({ description });
      break;
    case "ms":
      s = t.Number({ description });
      break;
    case "bool":
      s = t.Boolean({ description });
      break;
    case "time":
      s = t.String({ format: "date-time", description });
      break;
    default:
      s = t.String({ description });
  }
  return "required" in f ? s : t.Nullable(s);
}

/** The record's properties in the table's order; the timeline where its first instant is. */
function recordProperties(): RecordProperties {
  const props: Record<string, TSchema | null> = {};
  const timeline: Record<string, TSchema> = {};
  for (const f of FIELDS) {
    if ("timeline" in f) {
      props.timeline = null; // its place
      timeline[f.timeline] = schemaOf(f);
    } else props[f.name] = schemaOf(f);
  }
  props.timeline = t.Object(timeline, { description: "when each status was first seen" });
  return props as unknown as RecordProperties;
}

export const ExecutionRecord = t.Object(recordProperties(), { title: "ExecutionRecord" });
export type ExecutionRecord = Static<typeof ExecutionRecord>;

/** One install: its latest execution's record, and every execution first to last. */
export const InstallDetail = t.Composite([ExecutionRecord, t.Object({ executions: t.Array(ExecutionRecord) })], {
  title: "InstallDetail",
});
export type InstallDetail = Static<typeof InstallDetail>;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/**
 * The record of a stored execution, built once at module load as one object literal from the rows
 * (`{ random_id: row.randomId, ..., created_at: iso(row.createdAt), ... }`): it runs for every
 * row a list or an export returns, and a loop over the rows cost 2.4 times as much CPU.
 */
function compileToRecord(): (row: Execution) => ExecutionRecord {
  const str = (v: string) => JSON.stringify(v);
  const value = (f: Field): string => {
    const v = `row[${str(f.key)}]`;
    switch (f.kind) {
      case "time":
        return `iso(${v})`;
      case "ms":
        return `(${v} === null ? null : ${v} / 1000)`;
      case "json":
        return `(${v} === null ? null : JSON.parse(${v}))`;
      default:
        return v;
    }
  };
  const props: string[] = [];
  const timeline: string[] = [];
  let at = -1; // the timeline's place: where its first instant is
  for (const f of FIELDS) {
    if ("timeline" in f) {
      if (at < 0) at = props.push("") - 1;
      timeline.push(`${str(f.timeline)}: ${value(f)}`);
    } else props.push(`${str(f.name)}: ${value(f)}`);
  }
  props[at] = `"timeline": { ${timeline.join(", ")} }`;
  return new Function("iso", `return (row) => ({ ${props.join(", ")} });`)(iso) as (row: Execution) => ExecutionRecord;
}

export const toRecord = compileToRecord();
