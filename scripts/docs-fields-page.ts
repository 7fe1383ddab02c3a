// The field tables of the manual, built from the fields table (src/domain/fields.ts): each sits in
// its page between `<!-- fields:NAME ... -->` and `<!-- /fields:NAME -->`, and the text around
// them is written by hand. scripts/docs-fields.ts writes them, test/docs.test.ts compares them.
import {
  FIELDS,
  FILTER_FIELDS,
  requiredIn,
  sentDocOf,
  sentIn,
  wireName,
  type Field,
  type SentField,
} from "../src/domain/fields.ts";
import type { Endpoint } from "../src/domain/rejection.ts";

/** The pages that hold generated field tables. */
export const FIELD_PAGES = ["docs/protocol.md", "docs/api.md"] as const;

/** Text in a table cell: pipes escaped (a `|` would split the cell). */
const cell = (text: string): string => text.replaceAll("|", "\\|");
const code = (text: string): string => `\`${text}\``;
const number = (n: number): string => n.toLocaleString("en-US");

/** A field's type as a body carries it: JSON type and bounds. */
function sentType(f: SentField, endpoint: Endpoint): string {
  let type: string;
  switch (f.kind) {
    case "id":
      type = `string, ${f.bounds[0]}-${f.bounds[1]} characters`;
      break;
    case "integer":
      type = `int, ${number(f.bounds[0])}-${number(f.bounds[1])}`;
      break;
    case "size":
      type = `number, ${number(f.bounds[0])}-${number(f.bounds[1])} ${f.unit}; a unit may follow (\`32G\`, \`2048M\`)`;
      break;
    case "bool":
      type = "bool (or `yes`/`no`, `1`/`0`)";
      break;
    default:
      type = "string";
  }
  return requiredIn(f, endpoint) ? `${type}, required` : type;
}

/** The fields of one endpoint's body, in the order the clients send them. */
function bodyTable(endpoint: Endpoint): string {
  const rows: string[] = [];
  const seen = new Set<string>();
  for (const f of sentIn(endpoint)) {
    const name = wireName(f);
    if (seen.has(name)) continue; // v1's and v2's gpu_passthrough: one key, one row
    seen.add(name);
    const alias = "alias" in f ? ` (or ${code(f.alias)})` : "";
    rows.push(`| ${code(name)}${alias} | ${cell(sentType(f, endpoint))} | ${cell(sentDocOf(f, endpoint))} |`);
  }
  return ["| field | type | notes |", "|---|---|---|", ...rows].join("\n");
}

/** A field's type in the record. */
function recordType(f: Field): string {
  const nullable = "required" in f ? "" : ", or null";
  switch (f.kind) {
    case "enum":
      return f.values.map(code).join(", ");
    case "integer":
      return `int${nullable}`;
    case "size":
      return `${"whole" in f ? "int" : "number"} (${f.unit})${nullable}`;
    case "ms":
      return `number (seconds)${nullable}`;
    case "bool":
      return `bool${nullable}`;
    case "time":
      return `ISO 8601 time${nullable}`;
    case "json":
      return "object, or null";
    default:
      return `string${nullable}`;
  }
}

/** Every field of the record: its type, whether it is a filter and a breakdown, what it means. */
function recordTable(): string {
  const rows = FIELDS.map((f) => {
    const name = "timeline" in f ? `timeline.${f.timeline}` : f.name;
    const filter = "filter" in f ? "yes" : "";
    const breakdown = "dimension" in f ? "yes" : "";
    return `| ${code(name)} | ${cell(recordType(f))} | ${filter} | ${breakdown} | ${cell(f.doc)} |`;
  });
  return ["| field | type | filter | breakdown | meaning |", "|---|---|---|---|---|", ...rows].join("\n");
}

/** The read filters of the record's fields, in the order of their parameters. */
function filterTable(): string {
  const rows = FILTER_FIELDS.map((f) => {
    let match: string;
    if (f.kind === "enum") match = `one of ${("values" in f.filter ? f.filter.values : f.values).map(code).join(", ")}`;
    else if (f.kind === "integer") match = `a whole number, ${f.bounds[0]}-${f.bounds[1]}`;
    else if (f.kind === "id") match = "exact match";
    else
      match = `exact match${"lower" in f.filter ? " (lowercased, as stored)" : ""}; \`""\` selects those without one`;
    return `| ${code(f.name)} | ${cell(f.filter.doc)} | ${cell(match)} |`;
  });
  return ["| parameter | selects | value |", "|---|---|---|", ...rows].join("\n");
}

/** The CSV columns: the fields every release has exported, then the others, each group in the record's order. */
function exportColumns(): string {
  const names = (group: 1 | 2) =>
    FIELDS.filter((f) => f.csv === group)
      .map((f) => code(f.name))
      .join(", ");
  return [
    `1. the fields every release has exported: ${names(1)};`,
    `2. then the others, in the record's order: ${names(2)}.`,
  ].join("\n");
}

const BLOCKS: Record<string, () => string> = {
  telemetry: () => bodyTable("telemetry"),
  upload: () => bodyTable("upload"),
  updatestatus: () => bodyTable("updatestatus"),
  record: recordTable,
  filters: filterTable,
  export: exportColumns,
};

/** `page` with every generated block rewritten; an unknown or unclosed block is an error. */
export function renderFieldBlocks(page: string): string {
  return page.replace(
    /(<!-- fields:([a-z]+) [^\n]*-->\n)([\s\S]*?)(<!-- \/fields:([a-z]+) -->)/g,
    (_, open: string, name: string, _body, close: string, closing: string) => {
      const render = BLOCKS[name];
      if (render === undefined || closing !== name) throw new Error(`docs: unknown or unclosed field block ${name}`);
      return `${open}${render()}\n${close}`;
    },
  );
}
