// What an import's input is, told from its first line: our NDJSON export, the original API's
// /data/json array, or a dump of the community telemetry service's ClickHouse table (JSONEachRow
// or CSVWithNames, as clickhouse-client writes them). The input is decoded once (UTF-8; invalid
// bytes become U+FFFD, as the ingest path does) and handed on as text, its head included.

export type InputFormat = "ndjson" | "json-array" | "clickhouse-jsoneachrow" | "clickhouse-csv";

/** The input is none of the formats an import reads. */
export class ImportFormatError extends Error {}

/** Characters read to find the first line before giving up on telling the format. */
const HEAD_LIMIT = 16 * 1024 * 1024;

/** Columns every dump of the service's table has (its first schema already had them). */
const SERVICE_COLUMNS = ["random_id", "status", "created"];

async function* decoded(input: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder("utf-8"); // not fatal; drops a leading BOM
  for await (const chunk of input) yield typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
  const rest = decoder.decode();
  if (rest !== "") yield rest;
}

/** The names of a CSV header line (ClickHouse quotes them). */
function csvHeader(line: string): string[] {
  return line.split(",").map((name) =>
    name
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .replace(/""/g, '"'),
  );
}

function formatOf(firstLine: string): InputFormat {
  const line = firstLine.replace(/^[\s\ufeff]+/, "").trimEnd();
  if (line.startsWith("[")) return "json-array";
  if (line.startsWith("{")) {
    let first: unknown;
    try {
      first = JSON.parse(line);
    } catch {
      return "ndjson"; // a broken first line is reported as such by the NDJSON reader
    }
    const keys = typeof first === "object" && first !== null ? Object.keys(first) : [];
    return SERVICE_COLUMNS.every((k) => keys.includes(k)) && !keys.includes("created_at")
      ? "clickhouse-jsoneachrow"
      : "ndjson";
  }
  if (SERVICE_COLUMNS.every((k) => csvHeader(line).includes(k))) return "clickhouse-csv";
  throw new ImportFormatError(
    "the input is none of the formats import reads: our NDJSON export, the original API's /data/json array, or the telemetry service's table as clickhouse-client writes it (FORMAT JSONEachRow or FORMAT CSVWithNames)",
  );
}

/** The input's format and its text, from the first character on. An empty input is NDJSON with no records. */
export async function sniff(
  input: AsyncIterable<Uint8Array | string>,
): Promise<{ format: InputFormat; text: AsyncGenerator<string> }> {
  const source = decoded(input);
  let head = "";
  for (;;) {
    const start = head.replace(/^[\s\ufeff]+/, "");
    // An array is told by its first character (its first line may be the whole file); the rest by their first line.
    if (start.startsWith("[") || start.includes("\n") || head.length > HEAD_LIMIT) break;
    const next = await source.next();
    if (next.done) break;
    head += next.value;
  }
  const trimmed = head.replace(/^[\s\ufeff]+/, "");
  const format =
    trimmed === ""
      ? "ndjson"
      : formatOf(trimmed.slice(0, trimmed.indexOf("\n") >= 0 ? trimmed.indexOf("\n") : undefined));
  async function* text(): AsyncGenerator<string> {
    if (head !== "") yield head;
    yield* source;
  }
  return { format, text: text() };
}
