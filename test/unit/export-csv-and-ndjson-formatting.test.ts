// The export formats (src/read/export.ts): CSV (RFC 4180, formula-injection safe) and NDJSON
// (lossless) line by line, and the stream that writes them, pulled chunk by chunk from the store.
import { describe, expect, test } from "bun:test";
import { EXPORT_COLUMNS, csvHeader, csvRow, exportFilename, exportStream, ndjsonLine } from "../../src/read/export.ts";
import { ExecutionRecord, toRecord } from "../../src/read/record.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { COLUMNS, TIMELINE, asCells, parseCsv, row } from "../helpers/export.ts";

const cellOf = (record: ExecutionRecord, field: string) => {
  const [header, cells] = parseCsv(csvHeader() + csvRow(record));
  return cells![header!.indexOf(field)]!;
};

async function readAll(stream: ReadableStream<Uint8Array>): Promise<{ chunks: number; text: string }> {
  let chunks = 0;
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of stream) {
    chunks++;
    text += decoder.decode(chunk, { stream: true });
  }
  return { chunks, text: text + decoder.decode() };
}

describe("pure formatting", () => {
  test("the columns are the record's first fields in their order, then every other field of the record, the timeline flattened; the CSV header names them", async () => {
    expect(EXPORT_COLUMNS).toEqual(COLUMNS as typeof EXPORT_COLUMNS);
    // Every field of the record is a column (the timeline as its four times), and nothing else.
    const fields = Object.keys(ExecutionRecord.properties).filter((k) => k !== "timeline");
    expect([...fields, ...Object.keys(TIMELINE)].sort()).toEqual([...COLUMNS].sort());
    expect(Object.keys(toRecord(row())).sort()).toEqual(Object.keys(ExecutionRecord.properties).sort());
    expect(csvHeader()).toBe(`${COLUMNS.join(",")}\r\n`);
  });

  test("csvRow: null empty, booleans true/false, numbers as is, quoting only where needed", async () => {
    const record = toRecord(
      row({
        diskSize: 0.5,
        ctType: null,
        error: 'he said "no", then\nleft\r\nagain',
        repaired: true,
        durationMs: null,
        osVersion: "",
      }),
    );
    const line = csvRow(record);
    expect(line).toStartWith(
      'r-1,lxc,,0.5,2,2048,debian,"",yes,adguard,default,8.2.2,done,success,"he said ""no"", then\nleft\r\nagain",' +
        "2026-06-01T12:00:00.000Z,2026-06-01T12:01:30.000Z,,true,r-1,1,install,,",
    );
    expect(line).toEndWith(",2026-06-01T12:00:00.000Z,,,2026-06-01T12:01:30.000Z,\r\n");
    expect(cellOf(toRecord(row()), "duration_s")).toBe("90");
    expect(cellOf(toRecord(row()), "repaired")).toBe("false");
    // Parses back to the fields.
    const [, cells] = parseCsv(csvHeader() + line);
    expect(cells).toEqual(asCells(record));
  });

  test("formula-injection guard: a text cell starting with = + - @ TAB CR gets a leading quote", async () => {
    const cases: [string, string][] = [
      ['=HYPERLINK("http://evil.example","click")', `'=HYPERLINK("http://evil.example","click")`],
      ["+1", "'+1"],
      ["-2+3", "'-2+3"],
      ["@SUM(1)", "'@SUM(1)"],
      ["\tcmd", "'\tcmd"],
      ["\rcmd", "'\rcmd"],
      ["=1+1\n=2", "'=1+1\n=2"],
    ];
    for (const field of ["nsapp", "error", "method", "random_id", "os_version", "status"] as const) {
      for (const [value, shown] of cases) {
        const key = (
          {
            nsapp: "nsapp",
            error: "error",
            method: "method",
            random_id: "randomId",
            os_version: "osVersion",
            status: "status",
          } as const
        )[field];
        const record = toRecord(row({ [key]: value }));
        expect(cellOf(record, field)).toBe(shown);
      }
    }
    // Only the first character counts, and harmless texts are untouched.
    for (const value of [
      "a=b",
      "exit code -1",
      "x+y",
      "user@host",
      " =not a formula? spreadsheets trim; ours never start with a space",
    ]) {
      expect(cellOf(toRecord(row({ error: value })), "error")).toBe(value);
    }
    // The raw line: a CR-led cell is quoted (it contains CR) after the guard.
    expect(csvRow(toRecord(row({ nsapp: "\rX" })))).toContain(`,"'\rX",`);
  });

  test("numeric columns are never guarded: a negative number stays a number", async () => {
    const record = toRecord(row({ diskSize: -1.5, ramSize: -2048, durationMs: -1000 }));
    expect(cellOf(record, "disk_size")).toBe("-1.5");
    expect(cellOf(record, "ram_size")).toBe("-2048");
    expect(cellOf(record, "duration_s")).toBe("-1");
  });

  test("ndjsonLine is the record as JSON, one line, newline-terminated, lossless", async () => {
    const record = toRecord(
      row({ error: 'quote " comma , newline \n CR \r tab \t =1+1 日本語 🚀 \u2028', nsapp: "=HYPERLINK(1)" }),
    );
    const line = ndjsonLine(record);
    expect(line.endsWith("\n")).toBe(true);
    expect(line.slice(0, -1)).not.toContain("\n");
    expect(JSON.parse(line)).toEqual(record);
    expect(Object.keys(JSON.parse(line))).toEqual(Object.keys(record));
  });

  test("exportFilename is a UTC timestamp without colons", async () => {
    expect(exportFilename(Date.parse("2026-06-01T12:34:56.789Z"), "csv")).toBe("installstats-20260601T123456Z.csv");
    expect(exportFilename(Date.parse("2026-06-01T12:34:56Z"), "ndjson")).toBe("installstats-20260601T123456Z.ndjson");
  });
});

describe("exportStream", () => {
  const rows = (n: number) => Array.from({ length: n }, (_, i) => row({ randomId: `r-${i}`, createdAt: i }));
  /** The rows in chunks of `size`, as the store hands them over. */
  async function* chunked(list: Execution[], size: number) {
    for (let i = 0; i < list.length; i += size) yield list.slice(i, i + size);
  }

  test("one body chunk per store chunk, header first, everything once and in order", async () => {
    const csv = await readAll(exportStream(chunked(rows(10), 3), "csv"));
    expect(csv.chunks).toBe(4);
    expect(csv.text).toBe(
      csvHeader() +
        rows(10)
          .map((r) => csvRow(toRecord(r)))
          .join(""),
    );
    const nd = await readAll(exportStream(chunked(rows(9), 3), "ndjson"));
    expect(nd.chunks).toBe(3);
    expect(nd.text).toBe(
      rows(9)
        .map((r) => ndjsonLine(toRecord(r)))
        .join(""),
    );
  });

  test("no rows: the header alone (csv), nothing (ndjson)", async () => {
    expect(await readAll(exportStream(chunked([], 5), "csv"))).toEqual({ chunks: 1, text: csvHeader() });
    expect(await readAll(exportStream(chunked([], 5), "ndjson"))).toEqual({ chunks: 0, text: "" });
  });

  test("pull-based: rows are read only as the consumer reads, never the whole source ahead", async () => {
    let produced = 0;
    let closed = false;
    async function* source() {
      try {
        for (let i = 0; i < 10_000; i++) {
          produced += 100;
          yield Array.from({ length: 100 }, (_, j) => row({ randomId: `r-${i}-${j}` }));
        }
      } finally {
        closed = true;
      }
    }
    const reader = exportStream(source(), "ndjson").getReader();
    await reader.read();
    await Bun.sleep(5);
    // The chunk read plus at most one queued ahead (the stream's high-water mark).
    expect(produced).toBeLessThanOrEqual(200);
    expect(closed).toBe(false);
    await reader.cancel();
    expect(closed).toBe(true);
  });

  test("an error from the source errors the stream and closes the source", async () => {
    let closed = false;
    async function* source() {
      try {
        yield [row()];
        throw new Error("disk on fire");
      } finally {
        closed = true;
      }
    }
    await expect(readAll(exportStream(source(), "csv"))).rejects.toThrow("disk on fire");
    expect(closed).toBe(true);
  });
});
