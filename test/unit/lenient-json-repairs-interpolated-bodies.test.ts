import { describe, expect, test } from "bun:test";
import { parseLenientJson, type Repair } from "../../src/ingest/lenient-json.ts";
import type { JsonObject } from "../../src/domain/json.ts";
import { prng } from "../helpers/random.ts";

const encoder = new TextEncoder();

/** Bytes from text parts and raw byte arrays (for invalid UTF-8). */
function bytes(...parts: (string | number[])[]): Uint8Array {
  const chunks = parts.map((part) => (typeof part === "string" ? encoder.encode(part) : Uint8Array.from(part)));
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

function parse(body: string | Uint8Array) {
  return parseLenientJson(typeof body === "string" ? encoder.encode(body) : body);
}

/** Asserts a successful parse with exactly this value (own keys, in order) and these repairs. */
function expectParsed(body: string | Uint8Array, value: JsonObject, repairs: Repair[]): JsonObject {
  const result = parse(body);
  if (!result.ok) throw new Error(`expected ok, got failure: ${result.message}`);
  expect(result.value).toStrictEqual(value);
  expect(Object.keys(result.value)).toEqual(Object.keys(value));
  expect(result.repairs).toEqual(repairs);
  return result.value;
}

function expectRejected(body: string | Uint8Array, message: RegExp): void {
  const result = parse(body);
  if (result.ok) throw new Error(`expected failure, got ${JSON.stringify(result.value)}`);
  expect(result.message).toMatch(message);
}

/** The layout of the real status-update client: 4-space indent, one field per line. */
function updateBody(status: string, error: string, randomId = "2f1e0c3a-9b7d-4e21-8c55-0a1b2c3d4e5f"): string {
  return `{\n    "status": "${status}",\n    "error": "${error}",\n    "random_id": "${randomId}"\n}`;
}

const ID = "2f1e0c3a-9b7d-4e21-8c55-0a1b2c3d4e5f";
const update = (status: string, error: string): JsonObject => ({ status, error, random_id: ID });

type Case =
  | { name: string; body: string | Uint8Array; value: JsonObject; repairs: Repair[] }
  | { name: string; body: string | Uint8Array; error: RegExp };

const cases: Case[] = [
  // ---- strict JSON is taken as is
  {
    name: "valid status update (client layout)",
    body: updateBody("done", "none"),
    value: update("done", "none"),
    repairs: [],
  },
  {
    name: "valid start report with numbers",
    body: `{"ct_type": 1, "type":"lxc", "disk_size": 8, "core_count": 2, "ram_size": 2048, "status": "installing", "random_id": "r1"}`,
    value: {
      ct_type: 1,
      type: "lxc",
      disk_size: 8,
      core_count: 2,
      ram_size: 2048,
      status: "installing",
      random_id: "r1",
    },
    repairs: [],
  },
  {
    name: "quoted numbers are valid JSON: returned as strings, no repair",
    body: `{"disk_size": "32", "core_count": "2", "ram_size": "32G"}`,
    value: { disk_size: "32", core_count: "2", ram_size: "32G" },
    repairs: [],
  },
  {
    name: "strict nested values are returned as is (caller validates types)",
    body: `{"a": {"b": [1, 2, {"c": null}]}, "d": []}`,
    value: { a: { b: [1, 2, { c: null }] }, d: [] },
    repairs: [],
  },
  { name: "empty object", body: "{}", value: {}, repairs: [] },
  { name: "whitespace around the object", body: " \r\n\t{ }\n\n", value: {}, repairs: [] },
  {
    name: "duplicate keys in strict JSON: last wins",
    body: `{"status": "installing", "status": "done"}`,
    value: { status: "done" },
    repairs: [],
  },
  {
    name: "valid escapes and non-ASCII in strict JSON",
    body: `{"error": "caf\\u00e9 \\"q\\" \\\\ \\/ 中文 😀"}`,
    value: { error: 'café "q" \\ / 中文 😀' },
    repairs: [],
  },
  {
    name: "valid JSON with \\t and \\n in a Windows path is read as JSON (tab, newline)",
    body: `{"error": "C:\\temp\\new"}`,
    value: { error: "C:\temp\new" },
    repairs: [],
  },
  {
    name: "BOM is stripped silently",
    body: bytes([0xef, 0xbb, 0xbf], updateBody("done", "none")),
    value: update("done", "none"),
    repairs: [],
  },
  {
    name: "BOM before a damaged body: only the damage is reported",
    body: bytes([0xef, 0xbb, 0xbf], updateBody("failed", 'say "hi"')),
    value: update("failed", 'say "hi"'),
    repairs: ["unescaped_quote"],
  },

  // ---- raw quotes in error texts
  {
    name: "raw quotes around a command in the middle of the text",
    body: `{"status": "failed", "error": "sh -c "apt-get install" failed", "random_id": "abc"}`,
    value: { status: "failed", error: 'sh -c "apt-get install" failed', random_id: "abc" },
    repairs: ["unescaped_quote"],
  },
  {
    name: "raw quotes in the client layout",
    body: updateBody("failed", 'command "curl -fsSL https://x" exited with 22'),
    value: update("failed", 'command "curl -fsSL https://x" exited with 22'),
    repairs: ["unescaped_quote"],
  },
  {
    name: "text starting with a quote",
    body: updateBody("failed", '"quoted" at the start'),
    value: update("failed", '"quoted" at the start'),
    repairs: ["unescaped_quote"],
  },
  {
    name: "text that is a single quote",
    body: updateBody("failed", '"'),
    value: update("failed", '"'),
    repairs: ["unescaped_quote"],
  },
  {
    name: "text that is two quotes",
    body: updateBody("failed", '""'),
    value: update("failed", '""'),
    repairs: ["unescaped_quote"],
  },
  {
    name: "quote right before the closing brace (last field)",
    body: `{"status": "failed", "random_id": "abc", "error": "said "hi""}`,
    value: { status: "failed", random_id: "abc", error: 'said "hi"' },
    repairs: ["unescaped_quote"],
  },
  {
    name: 'quote + brace inside the text ("}" not at the end)',
    body: `{"status": "failed", "error": "got "}" here"}`,
    value: { status: "failed", error: 'got "}" here' },
    repairs: ["unescaped_quote"],
  },
  {
    name: 'text containing ", " sequences not followed by "key":',
    body: updateBody("failed", 'a", "b", "c'),
    value: update("failed", 'a", "b", "c'),
    repairs: ["unescaped_quote"],
  },
  {
    name: 'text containing ", " then a quoted word then a comma',
    body: updateBody("failed", 'packages: "curl", "sudo", "mc" missing'),
    value: update("failed", 'packages: "curl", "sudo", "mc" missing'),
    repairs: ["unescaped_quote"],
  },
  {
    name: 'text containing ": " (key-like but not after a comma)',
    body: updateBody("failed", 'config "key": "value" invalid'),
    value: update("failed", 'config "key": "value" invalid'),
    repairs: ["unescaped_quote"],
  },
  {
    name: "raw quote in the first field",
    body: `{"status": "fa"iled", "error": "none", "random_id": "abc"}`,
    value: { status: 'fa"iled', error: "none", random_id: "abc" },
    repairs: ["unescaped_quote"],
  },
  {
    // Was `a\"b` (\\ decoded) until 2026-11-24: the raw quote shows the client does not
    // escape, so both backslashes are text (docs/decisions/2026-11-24-repair-fidelity.md).
    name: "escaped backslash followed by a raw quote: the backslashes stay as sent",
    body: `{"error": "a\\\\"b", "random_id": "r"}`,
    value: { error: 'a\\\\"b', random_id: "r" },
    repairs: ["unescaped_quote"],
  },
  {
    name: 'documented ambiguity: text holding `", "key": "` is split at that point',
    body: `{"status": "failed\t", "error": "a", "k": "b", "random_id": "r"}`,
    value: { status: "failed\t", error: "a", k: "b", random_id: "r" },
    repairs: ["control_char"],
  },

  // ---- raw control characters
  {
    name: "raw newlines (multi-line bash output)",
    body: updateBody("failed", "line one\nline two\n"),
    value: update("failed", "line one\nline two\n"),
    repairs: ["control_char"],
  },
  {
    name: "raw tab",
    body: updateBody("failed", "col1\tcol2"),
    value: update("failed", "col1\tcol2"),
    repairs: ["control_char"],
  },
  {
    name: "raw CR LF",
    body: updateBody("failed", "first\r\nsecond"),
    value: update("failed", "first\r\nsecond"),
    repairs: ["control_char"],
  },
  {
    name: "raw ESC colour codes",
    body: updateBody("failed", "\u001b[31mERROR\u001b[0m: apt failed"),
    value: update("failed", "\u001b[31mERROR\u001b[0m: apt failed"),
    repairs: ["control_char"],
  },
  {
    name: "raw NUL",
    body: updateBody("failed", "a\u0000b"),
    value: update("failed", "a\u0000b"),
    repairs: ["control_char"],
  },
  {
    name: "DEL is allowed by JSON: no repair",
    body: updateBody("failed", "a\u007fb"),
    value: update("failed", "a\u007fb"),
    repairs: [],
  },
  {
    name: "raw control character inside a key",
    body: `{"err\tor": "x", "random_id": "r"}`,
    value: { "err\tor": "x", random_id: "r" },
    repairs: ["control_char"],
  },
  {
    name: "raw newline and raw quotes together, repairs in order of first occurrence",
    body: updateBody("failed", 'E: Unable to locate\npackage "foo"'),
    value: update("failed", 'E: Unable to locate\npackage "foo"'),
    repairs: ["control_char", "unescaped_quote"],
  },

  // ---- invalid escapes
  {
    // Decoded to ESC until 2026-11-24: \x is no JSON escape, so the text was never escaped
    // and `\x1b` is what the client's text held (docs/decisions/2026-11-24-repair-fidelity.md).
    name: "\\x1b colour codes stay as sent",
    body: updateBody("failed", "\\x1b[31mred\\x1b[0m"),
    value: update("failed", "\\x1b[31mred\\x1b[0m"),
    repairs: ["invalid_escape"],
  },
  {
    name: "\\e keeps the backslash",
    body: updateBody("failed", "\\e[1mbold\\e[0m"),
    value: update("failed", "\\e[1mbold\\e[0m"),
    repairs: ["invalid_escape"],
  },
  {
    name: "\\' keeps the backslash",
    body: updateBody("failed", "can\\'t connect"),
    value: update("failed", "can\\'t connect"),
    repairs: ["invalid_escape"],
  },
  {
    name: "\\q keeps the backslash",
    body: updateBody("failed", "a\\qb"),
    value: update("failed", "a\\qb"),
    repairs: ["invalid_escape"],
  },
  {
    name: "\\x without two hex digits keeps the backslash",
    body: updateBody("failed", "\\xZZ and \\x1"),
    value: update("failed", "\\xZZ and \\x1"),
    repairs: ["invalid_escape"],
  },
  {
    name: "incomplete \\u escape keeps the backslash",
    body: updateBody("failed", "bad \\u12G"),
    value: update("failed", "bad \\u12G"),
    repairs: ["invalid_escape"],
  },
  {
    // Decoded (é, ", \, TAB) until 2026-11-24: one invalid escape shows the string was not
    // escaped, so the JSON-looking escapes beside it are text too (docs/decisions/2026-11-24-repair-fidelity.md).
    name: "JSON-looking escapes stay as sent in a string with an invalid escape",
    body: updateBody("failed", 'caf\\u00e9 \\"ok\\" \\\\ \\t\\e'),
    value: update("failed", 'caf\\u00e9 \\"ok\\" \\\\ \\t\\e'),
    repairs: ["invalid_escape"],
  },
  {
    name: "Windows path ending in a backslash (middle field)",
    body: updateBody("failed", "cannot open C:\\dir\\"),
    value: update("failed", "cannot open C:\\dir\\"),
    repairs: ["invalid_escape"],
  },
  {
    name: "Windows path ending in a backslash (last field)",
    body: `{"status": "failed", "error": "C:\\dir\\"}`,
    value: { status: "failed", error: "C:\\dir\\" },
    repairs: ["invalid_escape"],
  },
  {
    name: "invalid escape inside a key",
    body: `{"a\\q": 1}`,
    value: { "a\\q": 1 },
    repairs: ["invalid_escape"],
  },

  // ---- numbers and bare words
  {
    name: "empty number before a comma",
    body: `{"disk_size": , "core_count": 2}`,
    value: { disk_size: null, core_count: 2 },
    repairs: ["empty_value"],
  },
  {
    name: "empty number before the closing brace",
    body: `{"core_count": 2, "disk_size": }`,
    value: { core_count: 2, disk_size: null },
    repairs: ["empty_value"],
  },
  {
    name: "empty numbers in the client layout",
    body: `{\n    "ct_type": 1,\n    "disk_size": ,\n    "core_count": ,\n    "random_id": "r"\n}`,
    value: { ct_type: 1, disk_size: null, core_count: null, random_id: "r" },
    repairs: ["empty_value"],
  },
  {
    name: "32G bare",
    body: `{"disk_size": 32G, "core_count": 2}`,
    value: { disk_size: "32G", core_count: 2 },
    repairs: ["bare_word"],
  },
  {
    name: "not found bare",
    body: `{"pve_version": not found, "status": "installing"}`,
    value: { pve_version: "not found", status: "installing" },
    repairs: ["bare_word"],
  },
  {
    name: "bare word as the last value, surrounding whitespace trimmed",
    body: `{"status": "installing", "pve_version":   not found  \n}`,
    value: { status: "installing", pve_version: "not found" },
    repairs: ["bare_word"],
  },
  {
    name: "decimal comma stays one bare value",
    body: `{"disk_size": 3,5, "core_count": 2}`,
    value: { disk_size: "3,5", core_count: 2 },
    repairs: ["bare_word"],
  },
  {
    name: "leading-zero number is not JSON: bare word",
    body: `{"ct_type": 08}`,
    value: { ct_type: "08" },
    repairs: ["bare_word"],
  },
  {
    name: "JSON numbers and literals in the lenient path",
    body: `{"a": -1.5e3, "b": 0, "c": true, "d": false, "e": null, "f": "\t"}`,
    value: { a: -1500, b: 0, c: true, d: false, e: null, f: "\t" },
    repairs: ["control_char"],
  },
  {
    name: "VM start report: empty disk, unquoted version text, raw quote",
    body:
      `{\n    "ct_type": 2,\n    "type":"vm",\n    "disk_size": ,\n    "core_count": 2,\n    "ram_size": 2048,\n` +
      `    "os_type": "debian",\n    "os_version": "12",\n    "disableip6": "",\n    "nsapp": "my"app",\n` +
      `    "method": "default",\n    "pve_version": not found,\n    "status": "installing",\n    "random_id": "r"\n}`,
    value: {
      ct_type: 2,
      type: "vm",
      disk_size: null,
      core_count: 2,
      ram_size: 2048,
      os_type: "debian",
      os_version: "12",
      disableip6: "",
      nsapp: 'my"app',
      method: "default",
      pve_version: "not found",
      status: "installing",
      random_id: "r",
    },
    repairs: ["empty_value", "unescaped_quote", "bare_word"],
  },

  // ---- trailing comma
  {
    name: "trailing comma",
    body: `{"a": 1,}`,
    value: { a: 1 },
    repairs: ["trailing_comma"],
  },
  {
    name: "trailing comma after a string, newline before the brace",
    body: `{\n    "status": "done",\n    "random_id": "r",\n}`,
    value: { status: "done", random_id: "r" },
    repairs: ["trailing_comma"],
  },
  {
    name: "trailing comma after an empty value",
    body: `{"a": "x", "disk_size": ,}`,
    value: { a: "x", disk_size: null },
    repairs: ["empty_value", "trailing_comma"],
  },
  {
    name: "many repairs, in order of first occurrence",
    body: `{"a": "x\ty", "b": 32G, "c": "q"q", "d": "\\e", "e": ,}`,
    value: { a: "x\ty", b: "32G", c: 'q"q', d: "\\e", e: null },
    repairs: ["control_char", "bare_word", "unescaped_quote", "invalid_escape", "empty_value", "trailing_comma"],
  },
  {
    name: "duplicate keys in the lenient path: last wins, first position kept",
    body: `{"a": 1, "b": "\t", "a": 2}`,
    value: { a: 2, b: "\t" },
    repairs: ["control_char"],
  },

  // ---- invalid UTF-8
  {
    name: "invalid UTF-8 byte in otherwise valid JSON",
    body: bytes('{"status": "failed", "error": "bad ', [0xff], ' byte"}'),
    value: { status: "failed", error: "bad \ufffd byte" },
    repairs: ["invalid_utf8"],
  },
  {
    name: "Latin-1 byte (é) from a non-UTF-8 locale",
    body: bytes('{"error": "caf', [0xe9], '"}'),
    value: { error: "caf\ufffd" },
    repairs: ["invalid_utf8"],
  },
  {
    name: "truncated multi-byte sequence plus raw quotes",
    body: bytes('{"error": "say "hi" ', [0xc3], '", "random_id": "r"}'),
    value: { error: 'say "hi" \ufffd', random_id: "r" },
    repairs: ["invalid_utf8", "unescaped_quote"],
  },

  // ---- rejected
  { name: "empty body", body: "", error: /empty body/ },
  { name: "whitespace-only body", body: " \n\t ", error: /empty body/ },
  { name: "plain text", body: "hello", error: /expected a JSON object starting with "\{" at offset 0/ },
  { name: "array", body: "[1,2]", error: /expected a JSON object, got an array/ },
  { name: "number", body: "42", error: /got a number/ },
  { name: "string", body: '"status"', error: /got a string/ },
  { name: "null", body: "null", error: /got null/ },
  { name: "boolean", body: "true", error: /got a boolean/ },
  { name: "HTML error page", body: "<html><body>502</body></html>", error: /starting with "\{"/ },
  { name: "lone opening brace", body: "{", error: /does not end with "\}"/ },
  {
    name: "missing closing brace",
    body: `{"status": "done", "random_id": "r"`,
    error: /does not end with "\}" \(it ends at offset 34/,
  },
  {
    name: "truncated inside a string",
    body: `{"status": "failed", "error": "apt-get ins`,
    error: /does not end with "\}"/,
  },
  { name: "text after the object", body: `{"a": 1} trailing`, error: /text after the object/ },
  { name: "second closing brace after a string", body: `{"a": "x"}}`, error: /unterminated string value for "a"/ },
  { name: "second closing brace after a number", body: `{"a": 1}}`, error: /unexpected "\}" at offset 7/ },
  {
    name: "unterminated string (no quote before a key or the final brace)",
    body: `{"a": "x, "b": 1}`,
    error: /unterminated string value for "a" starting at offset 6/,
  },
  { name: "unquoted key", body: `{a: 1}`, error: /expected a quoted key at offset 1/ },
  { name: "missing colon", body: `{"a" 1}`, error: /expected ":" after key "a"/ },
  { name: "leading comma", body: `{,}`, error: /expected a quoted key/ },
  { name: "empty value followed by a stray comma", body: `{"a": ,, "b": 1}`, error: /unexpected "," at offset 6/ },
  { name: "unquoted value with quotes inside", body: `{"a": x"y"}`, error: /unexpected "\\"" at offset 7/ },
  {
    name: "nested object in a damaged body",
    body: `{"a": {"b": 1}, "c": "\t"}`,
    error: /value of "a" at offset 6 is a nested object/,
  },
  { name: "nested array in a damaged body", body: `{"a": [1, 2], "b": 32G}`, error: /nested array/ },
  { name: "deep nesting of [", body: "[".repeat(100_000), error: /starting with "\{"/ },
  { name: "deep nesting of {", body: "{".repeat(100_000), error: /does not end with "\}"/ },
  {
    name: "deep nesting inside a damaged object",
    body: `{"a": ${"[".repeat(100_000)}}`,
    error: /nested array/,
  },
  { name: "deep balanced array", body: "[".repeat(100_000) + "]".repeat(100_000), error: /got an array/ },
];

describe("parseLenientJson: damaged bodies", () => {
  for (const c of cases) {
    test(c.name, async () => {
      if ("error" in c) expectRejected(c.body, c.error);
      else expectParsed(c.body, c.value, c.repairs);
    });
  }

  test("deep balanced nesting inside a valid object is strict JSON, returned as is", async () => {
    const result = parse(`{"a": ${"[".repeat(100_000)}${"]".repeat(100_000)}}`);
    // Either JSON.parse copes (value returned) or it gives up cleanly; it must not throw.
    if (result.ok) expect(Array.isArray(result.value.a)).toBe(true);
    else expect(result.message).toMatch(/nested array/);
  });

  test("huge string with raw quotes, newlines and escapes", async () => {
    const chunk = 'line "x" \t\\e done\n';
    const text = chunk.repeat(Math.floor(200_000 / chunk.length));
    expectParsed(updateBody("failed", text), update("failed", text), [
      "unescaped_quote",
      "control_char",
      "invalid_escape",
    ]);
  });

  test("huge valid string", async () => {
    const text = "x".repeat(250_000);
    expectParsed(JSON.stringify({ error: text }), { error: text }, []);
  });

  test("many fields in the lenient path", async () => {
    const expected: JsonObject = {};
    const fields: string[] = [];
    for (let i = 0; i < 5_000; i++) {
      expected[`k${i}`] = i % 2 === 0 ? `v "${i}"` : i;
      fields.push(i % 2 === 0 ? `"k${i}": "v "${i}""` : `"k${i}": ${i}`);
    }
    expectParsed(`{${fields.join(", ")}}`, expected, ["unescaped_quote"]);
  });
});

// ---------------------------------------------------------------- repair fidelity

/**
 * Repair fidelity (docs/decisions/2026-11-24-repair-fidelity.md): a string that is not a valid JSON string
 * (raw quote, raw control character, invalid escape) came from a client that does not escape,
 * so every backslash in it is kept as sent. Valid strings, and every strict body, read as JSON.
 * Bodies are written with String.raw: what is between the backticks is the bytes on the wire.
 */
const fidelity: Case[] = [
  // ---- backslashes in a string that shows it was not escaped
  {
    name: "C:\\temp beside a raw quote stays as sent (was a TAB)",
    body: String.raw`{"status": "failed", "error": "copy "a.txt" to C:\temp", "random_id": "r"}`,
    value: { status: "failed", error: String.raw`copy "a.txt" to C:\temp`, random_id: "r" },
    repairs: ["unescaped_quote"],
  },
  {
    name: "C:\\temp\\new beside a raw newline: \\t and \\n are text, the raw newline a newline",
    body: updateBody("failed", String.raw`cannot open C:\temp\new` + "\nsecond line"),
    value: update("failed", String.raw`cannot open C:\temp\new` + "\nsecond line"),
    repairs: ["control_char"],
  },
  {
    name: "\\b beside a raw quote stays as sent (was a backspace, invisible)",
    body: updateBody("failed", String.raw`grep "\bword\b" failed`),
    value: update("failed", String.raw`grep "\bword\b" failed`),
    repairs: ["unescaped_quote"],
  },
  {
    name: "\\x41, the only defect, stays as sent (was A)",
    body: updateBody("failed", String.raw`printf \x41`),
    value: update("failed", String.raw`printf \x41`),
    repairs: ["invalid_escape"],
  },
  {
    name: "\\x1b, the only defect, is itself the evidence: the whole string is literal",
    body: updateBody("failed", String.raw`\x1b[31mE:\x1b[0m see C:\temp`),
    value: update("failed", String.raw`\x1b[31mE:\x1b[0m see C:\temp`),
    repairs: ["invalid_escape"],
  },
  {
    name: "\\u0041 beside a raw quote stays as sent (was A)",
    body: updateBody("failed", String.raw`echo "\u0041"`),
    value: update("failed", String.raw`echo "\u0041"`),
    repairs: ["unescaped_quote"],
  },
  {
    name: "\\n written in an error text with raw quotes is backslash + n",
    body: updateBody("failed", String.raw`printf "a\nb" exited 1`),
    value: update("failed", String.raw`printf "a\nb" exited 1`),
    repairs: ["unescaped_quote"],
  },
  {
    name: 'unescaped quotes plus \\" and \\\\: all kept as sent',
    body: updateBody("failed", String.raw`sh -c "echo \"hi\" > C:\\out" failed`),
    value: update("failed", String.raw`sh -c "echo \"hi\" > C:\\out" failed`),
    repairs: ["unescaped_quote"],
  },
  {
    name: 'text ending in \\" before the closing quote (raw quotes earlier)',
    body: updateBody("failed", String.raw`say "hi\"`),
    value: update("failed", String.raw`say "hi\"`),
    repairs: ["unescaped_quote"],
  },
  {
    name: "raw tab and a backslash in a key: literal too",
    body: `{"a\\b\tc": 1}`,
    value: { "a\\b\tc": 1 },
    repairs: ["control_char"],
  },

  // ---- trailing backslash before the closing quote
  {
    name: "trailing backslash, middle field",
    body: updateBody("failed", String.raw`C:\dir` + "\\"),
    value: update("failed", String.raw`C:\dir` + "\\"),
    repairs: ["invalid_escape"],
  },
  {
    name: "trailing backslash, last field",
    body: String.raw`{"status": "failed", "error": "C:\temp\"}`,
    value: { status: "failed", error: String.raw`C:\temp` + "\\" },
    repairs: ["invalid_escape"],
  },
  {
    name: "a lone backslash as the whole text",
    body: updateBody("failed", "\\"),
    value: update("failed", "\\"),
    repairs: ["invalid_escape"],
  },
  {
    name: "two trailing backslashes after an invalid escape: both kept",
    body: updateBody("failed", String.raw`C:\dir\\`),
    value: update("failed", String.raw`C:\dir\\`),
    repairs: ["invalid_escape"],
  },
  {
    name: "two trailing backslashes in an otherwise strict body: JSON (one backslash)",
    body: updateBody("failed", String.raw`C:\\dir\\`),
    value: update("failed", String.raw`C:\dir` + "\\"),
    repairs: [],
  },

  // ---- strict bodies are JSON.parse, whatever they hold
  {
    name: "strict body with real escapes is read exactly as JSON.parse",
    body: String.raw`{"error": "C:\temp \"q\" \u0041 \b \f \n \r \/ \\ \ud83d\ude00", "random_id": "r"}`,
    value: JSON.parse(String.raw`{"error": "C:\temp \"q\" \u0041 \b \f \n \r \/ \\ \ud83d\ude00", "random_id": "r"}`),
    repairs: [],
  },
  {
    name: "invalid UTF-8 in an otherwise strict body: still JSON (\\t is a TAB)",
    body: bytes(String.raw`{"error": "caf`, [0xe9], String.raw` C:\temp"}`),
    value: { error: "caf\ufffd C:\temp" },
    repairs: ["invalid_utf8"],
  },

  // ---- evidence is judged per string
  {
    name: "a correctly escaped error beside a raw quote in nsapp (/telemetry: jq escapes only some fields)",
    body: String.raw`{"nsapp": "my"app", "error": "exit_code=1\n---\nsay \"hi\" C:\\temp", "random_id": "r"}`,
    value: { nsapp: 'my"app', error: 'exit_code=1\n---\nsay "hi" C:\\temp', random_id: "r" },
    repairs: ["unescaped_quote"],
  },
  {
    name: "\\u0041 in a valid string of a repaired body reads as JSON (A)",
    body: String.raw`{"method": "def"ault", "error": "\u0041", "random_id": "r"}`,
    value: { method: 'def"ault', error: "A", random_id: "r" },
    repairs: ["unescaped_quote"],
  },
  {
    name: "repairs outside strings (empty value, bare word, trailing comma) are no evidence",
    body: String.raw`{"disk_size": , "pve_version": not found, "error": "a\tb \\ C:\\x", "random_id": "r",}`,
    value: { disk_size: null, pve_version: "not found", error: "a\tb \\ C:\\x", random_id: "r" },
    repairs: ["empty_value", "bare_word", "trailing_comma"],
  },

  // ---- non-UTF-8 bytes
  {
    name: "Latin-1 byte, raw quotes and backslashes: U+FFFD, the rest as sent",
    body: bytes(String.raw`{"error": "caf`, [0xe9], String.raw` "x" C:\temp", "random_id": "r"}`),
    value: { error: String.raw`caf` + "\ufffd" + String.raw` "x" C:\temp`, random_id: "r" },
    repairs: ["invalid_utf8", "unescaped_quote"],
  },
  {
    name: "truncated UTF-8 sequence right before a trailing backslash",
    body: bytes(String.raw`{"status": "failed", "error": "C:\d`, [0xc3], String.raw`\"}`),
    value: { status: "failed", error: String.raw`C:\d` + "\ufffd\\" },
    repairs: ["invalid_utf8", "invalid_escape"],
  },

  // ---- "" and an absent field stay distinct
  {
    name: 'strict: "" is kept, an absent field has no key',
    body: `{"disableip6": "", "random_id": "r"}`,
    value: { disableip6: "", random_id: "r" },
    repairs: [],
  },
  {
    name: 'lenient: "" is kept, an empty value is null, an absent field has no key',
    body: `{"disableip6": "", "disk_size": , "error": "", "random_id": "r", "os_version": ""}`,
    value: { disableip6: "", disk_size: null, error: "", random_id: "r", os_version: "" },
    repairs: ["empty_value"],
  },
  {
    name: 'lenient, client layout: "" before a bare word and as the last field',
    body: `{\n    "disableip6": "",\n    "pve_version": not found,\n    "nsapp": ""\n}`,
    value: { disableip6: "", pve_version: "not found", nsapp: "" },
    repairs: ["bare_word"],
  },
];

describe("parseLenientJson: repair fidelity", () => {
  for (const c of fidelity) {
    test(c.name, async () => {
      if ("error" in c) expectRejected(c.body, c.error);
      else expectParsed(c.body, c.value, c.repairs);
    });
  }

  test("absent fields are absent: no key, not undefined, not null", async () => {
    const result = parse(`{"status": "installing", "disk_size": 32G, "random_id": "r"}`);
    if (!result.ok) throw new Error(result.message);
    expect(Object.hasOwn(result.value, "disableip6")).toBe(false);
    expect(Object.keys(result.value)).toEqual(["status", "disk_size", "random_id"]);
  });
});

describe("parseLenientJson: prototype keys", () => {
  const pristine = (): void => {
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
    expect(Object.prototype).not.toHaveProperty("polluted");
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
  };

  test("__proto__ in strict JSON is an own property", async () => {
    const value = expectParsed(
      `{"__proto__": {"polluted": 1}, "a": 1}`,
      JSON.parse(`{"__proto__": {"polluted": 1}, "a": 1}`),
      [],
    );
    expect(Object.hasOwn(value, "__proto__")).toBe(true);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    pristine();
  });

  test("__proto__, constructor and prototype in the lenient path are own properties", async () => {
    const result = parse(`{"__proto__": "p\t", "constructor": 1, "prototype": 32G, "polluted": ,}`);
    if (!result.ok) throw new Error(result.message);
    const value = result.value;
    expect(Object.keys(value)).toEqual(["__proto__", "constructor", "prototype", "polluted"]);
    expect(Object.getOwnPropertyDescriptor(value, "__proto__")).toEqual({
      value: "p\t",
      writable: true,
      enumerable: true,
      configurable: true,
    });
    expect(value["constructor"]).toBe(1);
    expect(value["prototype"]).toBe("32G");
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(result.repairs).toEqual(["control_char", "bare_word", "empty_value", "trailing_comma"]);
    pristine();
  });

  test("lenient result matches JSON.parse for the same keys", async () => {
    const result = parse(`{"__proto__": "x", "constructor": "y", "a": "\t"}`);
    if (!result.ok) throw new Error(result.message);
    expect(result.value).toStrictEqual(JSON.parse(`{"__proto__": "x", "constructor": "y", "a": "\\t"}`));
    pristine();
  });
});

// ---------------------------------------------------------------- property tests

const ALPHABET = [
  ..."abcdefghijklmnopqrstuvwxyz0123456789 -_./",
  ...'"""\\\\,,::{}[]\'',
  "\n",
  "\t",
  "\r",
  "\u001b",
  "\u0000",
  "\u007f",
  "é",
  "中",
  "😀",
];

type Scalar = string | number | boolean | null;

function randomString(random: () => number, maxLength: number): string {
  const length = Math.floor(random() * maxLength);
  let text = "";
  for (let i = 0; i < length; i++) text += ALPHABET[Math.floor(random() * ALPHABET.length)];
  return text;
}

function randomScalar(random: () => number): Scalar {
  const pick = random();
  if (pick < 0.7) return randomString(random, 40);
  if (pick < 0.85) return Math.floor(random() * 1e6) - 1000;
  if (pick < 0.9) return random() * 100;
  if (pick < 0.95) return random() < 0.5;
  return null;
}

function randomObject(random: () => number): Record<string, Scalar> {
  const object: Record<string, Scalar> = {};
  const count = 1 + Math.floor(random() * 8);
  for (let i = 0; i < count; i++) {
    const key = random() < 0.8 ? `field_${Math.floor(random() * 20)}` : randomString(random, 10);
    object[key] = randomScalar(random);
  }
  return object;
}

const SEED = 20240611;
const ROUNDS = 400;

describe("parseLenientJson: round trips (seeded)", () => {
  test(`JSON.stringify round-trips with no repairs (seed ${SEED})`, async () => {
    const random = prng(SEED);
    for (let i = 0; i < ROUNDS; i++) {
      const object = randomObject(random);
      const indent = i % 2 === 0 ? undefined : 4;
      const result = parse(JSON.stringify(object, null, indent));
      expect(result).toStrictEqual({ ok: true, value: object, repairs: [] });
    }
  });

  test(`JSON.stringify plus a trailing comma round-trips through the lenient path (seed ${SEED})`, async () => {
    const random = prng(SEED + 1);
    for (let i = 0; i < ROUNDS; i++) {
      const object = randomObject(random);
      const json = JSON.stringify(object, null, i % 2 === 0 ? undefined : 4);
      const damaged = json.replace(/\s*\}$/, ",\n}");
      const result = parse(damaged);
      expect(result).toStrictEqual({ ok: true, value: object, repairs: ["trailing_comma"] });
    }
  });

  // What bash does: "key": "$value" with nothing escaped. A `", "key":` inside a value is
  // inherently ambiguous, so such values are left out. Backslashes are replaced here; the
  // next property test keeps them where the string shows it was not escaped.
  const KEY_LIKE = /"[ \t\n\r]*,[ \t\n\r]*"[^"]*"[ \t\n\r]*:/;
  const interpolable = (value: Scalar): boolean =>
    typeof value !== "string" || (!value.includes("\\") && !KEY_LIKE.test(value));

  function withoutBackslashes(object: Record<string, Scalar>): Record<string, Scalar> {
    const copy: Record<string, Scalar> = {};
    for (const [key, value] of Object.entries(object)) {
      copy[key] = typeof value === "string" ? value.replaceAll("\\", "/") : value;
    }
    return copy;
  }

  function interpolate(object: Record<string, Scalar>, layout: "inline" | "client"): string {
    const fields = Object.entries(object).map(([key, value]) =>
      typeof value === "string" ? `"${key}": "${value}"` : `"${key}": ${String(value)}`,
    );
    return layout === "inline" ? `{${fields.join(", ")}}` : `{\n    ${fields.join(",\n    ")}\n}`;
  }

  /** The repairs the naive body needs, in order of first occurrence. */
  function expectedRepairs(object: Record<string, Scalar>): Repair[] {
    const seen = new Set<Repair>();
    for (const value of Object.values(object)) {
      if (typeof value !== "string") continue;
      for (const char of value) {
        if (char === '"') seen.add("unescaped_quote");
        else if (char.charCodeAt(0) < 0x20) seen.add("control_char");
      }
    }
    return [...seen];
  }

  test(`naive bash interpolation round-trips (seed ${SEED})`, async () => {
    const random = prng(SEED + 2);
    let checked = 0;
    for (let i = 0; checked < ROUNDS && i < ROUNDS * 10; i++) {
      const object = withoutBackslashes(randomObject(random));
      if (!Object.keys(object).every((key) => /^[a-z_0-9]+$/.test(key))) continue; // bash keys are literals
      if (!Object.values(object).every(interpolable)) continue;
      checked++;
      for (const layout of ["inline", "client"] as const) {
        const body = interpolate(object, layout);
        const result = parse(body);
        expect({ body, result }).toStrictEqual({
          body,
          result: { ok: true, value: object, repairs: expectedRepairs(object) },
        });
      }
    }
    expect(checked).toBe(ROUNDS);
  });

  /** The repairs a string needs when read as JSON would read it, in order of first occurrence. */
  function stringDamage(value: string): Repair[] {
    const seen = new Set<Repair>();
    for (let i = 0; i < value.length; i++) {
      const char = value.charAt(i);
      if (char === "\\") {
        const next = value.charAt(i + 1);
        if ('"\\/bfnrt'.includes(next) && next !== "") i++;
        else if (next === "u" && /^[0-9a-fA-F]{4}$/.test(value.slice(i + 2, i + 6))) i += 5;
        else seen.add("invalid_escape");
      } else if (char === '"') seen.add("unescaped_quote");
      else if (char.charCodeAt(0) < 0x20) seen.add("control_char");
    }
    return [...seen];
  }

  test(`naive bash interpolation keeps backslashes as sent in strings that were evidently not escaped (seed ${SEED})`, async () => {
    const random = prng(SEED + 3);
    let checked = 0;
    let literal = 0;
    for (let i = 0; checked < ROUNDS && i < ROUNDS * 10; i++) {
      const object = randomObject(random);
      if (!Object.keys(object).every((key) => /^[a-z_0-9]+$/.test(key))) continue;
      // A valid JSON string is read as JSON (repair fidelity is per string): no backslashes there.
      for (const [key, value] of Object.entries(object)) {
        if (typeof value !== "string" || !value.includes("\\")) continue;
        if (stringDamage(value).length === 0) object[key] = value.replaceAll("\\", "/");
      }
      if (!Object.values(object).every((value) => typeof value !== "string" || !KEY_LIKE.test(value))) continue;
      checked++;
      literal += Object.values(object).filter((value) => typeof value === "string" && value.includes("\\")).length;
      const seen = new Set<Repair>();
      for (const value of Object.values(object))
        if (typeof value === "string") for (const r of stringDamage(value)) seen.add(r);
      for (const layout of ["inline", "client"] as const) {
        const body = interpolate(object, layout);
        expect({ body, result: parse(body) }).toStrictEqual({
          body,
          result: { ok: true, value: object, repairs: [...seen] },
        });
      }
    }
    expect(checked).toBe(ROUNDS);
    expect(literal).toBeGreaterThan(ROUNDS / 4); // the property is not vacuous
  });
});
