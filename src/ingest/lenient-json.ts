// Lenient JSON for telemetry bodies built by bash string interpolation (docs/protocol.md#what-is-repaired-what-is-rejected).
// Strict JSON wins whenever it parses; otherwise a flat-object parser repairs the known
// kinds of damage and says which repairs it made. Pure: bytes in, value or reason out.
import type { JsonObject } from "../domain/json.ts";

export type Repair =
  | "invalid_utf8" // bytes were not valid UTF-8; decoded with U+FFFD replacement
  | "control_char" // raw control characters (newline, tab, ESC, NUL...) inside a string
  | "invalid_escape" // backslash escape JSON does not allow (\x1b, \e, \', a lone trailing backslash)
  // Any of the three above makes the string's backslashes literal (see decodeString).
  | "unescaped_quote" // a " inside a string value that the client did not escape
  | "empty_value" // `"disk_size": ,` or `"disk_size": }` -> null
  | "bare_word" // an unquoted value such as 32G or not found -> the string as written
  | "trailing_comma"; // `{"a":1,}`

export type LenientParse = { ok: true; value: JsonObject; repairs: Repair[] } | { ok: false; message: string };

type Scalar = string | number | boolean | null;

/** Thrown inside the lenient parser only; turned into `{ ok: false }` at the top. */
class ParseFailure extends Error {}

/**
 * Parses a request body into a JSON object, repairing what bash clients break.
 * Repairs are unique and in order of first occurrence; [] when the body was strict JSON.
 * Offsets in failure messages count UTF-16 units of the decoded text (BOM removed).
 */
export function parseLenientJson(bytes: Uint8Array): LenientParse {
  const repairs = new RepairLog();
  const text = decode(bytes, repairs);

  const strict = parseStrict(text);
  if (strict.kind === "object") return { ok: true, value: strict.value, repairs: repairs.list() };
  if (strict.kind === "other") {
    return { ok: false, message: `expected a JSON object, got ${strict.what}` };
  }

  try {
    const start = checkEnvelope(text);
    const value = new FlatObjectParser(text, repairs).parse(start);
    return { ok: true, value, repairs: repairs.list() };
  } catch (error) {
    if (error instanceof ParseFailure) return { ok: false, message: error.message };
    throw error;
  }
}

// ---------------------------------------------------------------- decoding

class RepairLog {
  private readonly seen = new Set<Repair>();
  add(repair: Repair): void {
    this.seen.add(repair); // a Set keeps insertion order: first occurrence wins
  }
  list(): Repair[] {
    return [...this.seen];
  }
}

function decode(bytes: Uint8Array, repairs: RepairLog): string {
  let text: string;
  try {
    // ignoreBOM: keep the BOM in the output so that stripping it is explicit below.
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
    repairs.add("invalid_utf8");
  }
  // A BOM is an encoding artefact, not damage to the report: strip it silently.
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

type StrictResult = { kind: "object"; value: JsonObject } | { kind: "other"; what: string } | { kind: "invalid" };

function parseStrict(text: string): StrictResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // SyntaxError for broken bodies; RangeError is possible for hostile nesting.
    return { kind: "invalid" };
  }
  if (isJsonObject(parsed)) return { kind: "object", value: parsed };
  return { kind: "other", what: describeJsonValue(parsed) };
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describeJsonValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

// ---------------------------------------------------------------- lenient parser

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;

function isJsonWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
/** The characters JSON allows after a backslash, besides `u` + 4 hex digits. */
const SIMPLE_ESCAPES: ReadonlySet<string> = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);

/**
 * Structural lookahead, precomputed right-to-left so every question is O(1).
 *
 * A "boundary" is a position where a value may end: a `,` followed by `"key"` and `:`
 * (the key runs to the next unescaped quote), a `,` followed by the final `}` (trailing
 * comma), or the final `}` itself (only whitespace after it). A string value ends at its
 * first `"` whose next non-whitespace character is a boundary; every other `"` in between
 * is text the client did not escape. That first `"` may be escaped (`\"`): bash clients
 * never escape, so `\", "key":` is a text ending in a backslash, and skipping it would
 * swallow the following fields (often random_id) into the text.
 */
class Lookahead {
  readonly n: number;
  private readonly nextNonWs: Int32Array;
  private readonly nextUnescapedQuote: Int32Array;
  private readonly nextBoundary: Int32Array;
  private readonly nextClosingQuote: Int32Array;

  constructor(private readonly text: string) {
    const n = text.length;
    this.n = n;
    this.nextNonWs = new Int32Array(n + 1);
    this.nextUnescapedQuote = new Int32Array(n + 1);
    this.nextBoundary = new Int32Array(n + 1);
    this.nextClosingQuote = new Int32Array(n + 1);
    this.fillNextNonWs();
    this.fillNextUnescapedQuote(unescapedQuoteFlags(text));
    this.fillBoundariesAndClosingQuotes();
  }

  /** First index >= p that is not JSON whitespace, or n. */
  skipWs(p: number): number {
    return this.nextNonWs[Math.min(p, this.n)] ?? this.n;
  }

  /** First `"` at index >= p not preceded by an odd run of backslashes, or n. */
  unescapedQuoteFrom(p: number): number {
    return this.nextUnescapedQuote[Math.min(p, this.n)] ?? this.n;
  }

  /** First boundary at index >= p, or n. */
  boundaryFrom(p: number): number {
    return this.nextBoundary[Math.min(p, this.n)] ?? this.n;
  }

  /** First `"` at index >= p (escaped or not) followed by a boundary, or n. */
  closingQuoteFrom(p: number): number {
    return this.nextClosingQuote[Math.min(p, this.n)] ?? this.n;
  }

  /** True when only whitespace follows index p (exclusive). */
  endsAfter(p: number): boolean {
    return this.skipWs(p + 1) === this.n;
  }

  private fillNextNonWs(): void {
    const { text, n, nextNonWs } = this;
    nextNonWs[n] = n;
    for (let i = n - 1; i >= 0; i--) {
      nextNonWs[i] = isJsonWhitespace(text.charCodeAt(i)) ? (nextNonWs[i + 1] ?? n) : i;
    }
  }

  private fillNextUnescapedQuote(flags: Uint8Array): void {
    const { n, nextUnescapedQuote } = this;
    nextUnescapedQuote[n] = n;
    for (let i = n - 1; i >= 0; i--) {
      nextUnescapedQuote[i] = flags[i] === 1 ? i : (nextUnescapedQuote[i + 1] ?? n);
    }
  }

  private fillBoundariesAndClosingQuotes(): void {
    const { text, n, nextBoundary, nextClosingQuote } = this;
    nextBoundary[n] = n;
    nextClosingQuote[n] = n;
    // isBoundary reads only nextNonWs and nextUnescapedQuote, which are complete by now.
    for (let i = n - 1; i >= 0; i--) {
      const code = text.charCodeAt(i);
      nextBoundary[i] = this.isBoundary(i) ? i : (nextBoundary[i + 1] ?? n);
      const closes = code === QUOTE && this.isBoundary(this.skipWs(i + 1));
      nextClosingQuote[i] = closes ? i : (nextClosingQuote[i + 1] ?? n);
    }
  }

  /** Whether a value may end at p (see the class comment); O(1) with the tables above. */
  isBoundary(p: number): boolean {
    if (p >= this.n) return false;
    const code = this.text.charCodeAt(p);
    if (code === CLOSE_BRACE) return this.endsAfter(p);
    if (code !== COMMA) return false;
    const next = this.skipWs(p + 1);
    const nextCode = this.text.charCodeAt(next);
    if (nextCode === CLOSE_BRACE) return this.endsAfter(next);
    if (nextCode !== QUOTE) return false;
    const keyEnd = this.unescapedQuoteFrom(next + 1);
    return keyEnd < this.n && this.text.charCodeAt(this.skipWs(keyEnd + 1)) === COLON;
  }
}

/** 1 at each `"` that JSON reads as unescaped (preceded by an even run of backslashes). */
function unescapedQuoteFlags(text: string): Uint8Array {
  const flags = new Uint8Array(text.length);
  let backslashes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE && backslashes % 2 === 0) flags[i] = 1;
    backslashes = code === BACKSLASH ? backslashes + 1 : 0;
  }
  return flags;
}

/**
 * Rejects bodies that are not `{ ... }` at all, before any table is built, with the most
 * useful message. Returns the index of the opening `{`.
 */
function checkEnvelope(text: string): number {
  let first = 0;
  while (first < text.length && isJsonWhitespace(text.charCodeAt(first))) first++;
  if (first >= text.length) throw new ParseFailure("empty body: expected a JSON object");
  if (text.charCodeAt(first) !== OPEN_BRACE) {
    throw new ParseFailure(
      `expected a JSON object starting with "{" at offset ${first}, found ${snippet(text, first)}`,
    );
  }
  let last = text.length - 1;
  while (last > first && isJsonWhitespace(text.charCodeAt(last))) last--;
  if (last === first || text.charCodeAt(last) !== CLOSE_BRACE) {
    throw new ParseFailure(
      `the body does not end with "}" (it ends at offset ${last} with ${snippet(text, last)}): ` +
        "truncated, or text after the object",
    );
  }
  return first;
}

/** A short, escaped excerpt for messages. */
function snippet(text: string, p: number): string {
  if (p >= text.length) return "the end of the body";
  const excerpt = text.slice(p, p + 20);
  return JSON.stringify(excerpt) + (p + 20 < text.length ? "..." : "");
}

/** Parses a flat object `{ "key": scalar, ... }`, single pass, no recursion. */
class FlatObjectParser {
  private readonly look: Lookahead;

  constructor(
    private readonly text: string,
    private readonly repairs: RepairLog,
  ) {
    this.look = new Lookahead(text);
  }

  /** `start` is the index of the opening `{` (see checkEnvelope). */
  parse(start: number): JsonObject {
    const result: JsonObject = {};
    let p = this.look.skipWs(start + 1);
    if (this.code(p) === CLOSE_BRACE) {
      this.expectEnd(p);
      return result;
    }
    for (;;) {
      const key = this.parseKey(p);
      const value = this.parseValue(key.text, this.look.skipWs(key.end + 1));
      setOwn(result, key.text, value.value);
      // parseValue stops at a boundary: `,` + key, `,` + final `}`, or final `}`.
      const boundary = value.end;
      if (this.code(boundary) === CLOSE_BRACE) return result;
      const afterComma = this.look.skipWs(boundary + 1);
      if (this.code(afterComma) === CLOSE_BRACE) {
        this.repairs.add("trailing_comma");
        return result;
      }
      p = afterComma;
    }
  }

  private parseKey(p: number): { text: string; end: number } {
    if (this.code(p) !== QUOTE) {
      throw new ParseFailure(`expected a quoted key at offset ${p}, found ${this.snippet(p)}`);
    }
    const end = this.look.unescapedQuoteFrom(p + 1);
    if (end >= this.look.n) throw new ParseFailure(`unterminated key starting at offset ${p}`);
    const key = this.decodeString(p + 1, end);
    const colon = this.look.skipWs(end + 1);
    if (this.code(colon) !== COLON) {
      throw new ParseFailure(
        `expected ":" after key ${JSON.stringify(key)} at offset ${colon}, found ${this.snippet(colon)}`,
      );
    }
    return { text: key, end: colon };
  }

  /** Returns the value and the boundary index where it ends. */
  private parseValue(key: string, p: number): { value: Scalar; end: number } {
    const code = this.code(p);
    if (code === QUOTE) return this.parseStringValue(key, p);
    if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      throw new ParseFailure(
        `the value of ${JSON.stringify(key)} at offset ${p} is a nested ${code === OPEN_BRACE ? "object" : "array"}; ` +
          "nested values are only accepted in strictly valid JSON",
      );
    }
    return this.parseUnquotedValue(key, p);
  }

  private parseStringValue(key: string, open: number): { value: Scalar; end: number } {
    const close = this.look.closingQuoteFrom(open + 1);
    if (close >= this.look.n) {
      throw new ParseFailure(
        `unterminated string value for ${JSON.stringify(key)} starting at offset ${open}: ` +
          'no closing quote followed by "," and a key, or by the final "}"',
      );
    }
    return { value: this.decodeString(open + 1, close), end: this.look.skipWs(close + 1) };
  }

  /** Numbers, literals, empty values and bare words all run up to the next boundary. */
  private parseUnquotedValue(key: string, p: number): { value: Scalar; end: number } {
    const end = this.look.boundaryFrom(p);
    if (end >= this.look.n) {
      throw new ParseFailure(
        `the value of ${JSON.stringify(key)} at offset ${p} is not followed by "," and a key, or by the final "}"`,
      );
    }
    const raw = this.text.slice(p, this.trimEnd(p, end));
    return { value: this.readUnquoted(key, raw, p), end };
  }

  private readUnquoted(key: string, raw: string, offset: number): Scalar {
    if (raw === "") {
      this.repairs.add("empty_value");
      return null;
    }
    if (raw === "true") return true;
    if (raw === "false") return false;
    if (raw === "null") return null;
    if (NUMBER.test(raw)) return Number(raw);
    // Structural characters inside an unquoted run mean the body is not a flat object
    // we can read with confidence (e.g. `1}}`, `x"y"`, `,,`): reject rather than guess.
    const bad = raw.startsWith(",") ? 0 : raw.search(/["{}[\]]/);
    if (bad >= 0) {
      throw new ParseFailure(
        `unexpected ${JSON.stringify(raw.charAt(bad))} at offset ${offset + bad} in the unquoted value of ${JSON.stringify(key)}`,
      );
    }
    this.repairs.add("bare_word");
    return raw;
  }

  /**
   * Decodes string content in [start, end) (a key or a value) and notes its repairs.
   *
   * Repair fidelity (docs/decisions/2026-11-24-repair-fidelity.md): a string is read as JSON only when it is
   * a valid JSON string. A string that is not (a raw `"`, a raw control character, or an
   * escape JSON does not allow: `\x1b`, `\e`, `\'`, a trailing lone backslash) was written
   * by a client that does not escape, so none of its backslashes is an escape: it is kept
   * exactly as sent (`C:\temp`, `\b`, `\x41`, `\u0041`, `\"` and `\n` stay as written).
   * The evidence is judged per string, not per body: /telemetry clients escape `error` and
   * the model strings (jq or awk) but interpolate every other field raw, so a raw quote in
   * `nsapp` says nothing about the backslashes of a correctly escaped `error`. Repairs that
   * do not touch strings (empty values, bare words, trailing commas, invalid UTF-8) are no
   * evidence either. A strict body never gets here: JSON.parse read it.
   */
  private decodeString(start: number, end: number): string {
    const raw = this.text.slice(start, end);
    if (this.scanString(start, end)) return raw;
    // Every escape is valid and nothing needs escaping: exactly what JSON.parse makes of it.
    return raw.includes("\\") ? (JSON.parse(`"${raw}"`) as string) : raw;
  }

  /**
   * Reads [start, end) as JSON would, noting each kind of damage in the repair log.
   * True when the string is not a valid JSON string (the evidence of a non-escaping client).
   */
  private scanString(start: number, end: number): boolean {
    const { text } = this;
    let damaged = false;
    let i = start;
    while (i < end) {
      const code = text.charCodeAt(i);
      if (code === BACKSLASH) {
        const length = this.escapeLength(i, end);
        if (length > 0) {
          i += length;
          continue;
        }
        this.repairs.add("invalid_escape");
        damaged = true;
      } else if (code === QUOTE) {
        // Raw quotes (the closing one was chosen by lookahead) are text the client meant.
        this.repairs.add("unescaped_quote");
        damaged = true;
      } else if (code < 0x20) {
        this.repairs.add("control_char");
        damaged = true;
      }
      i++; // after an invalid escape, the next character is read on its own
    }
    return damaged;
  }

  /** Length of the valid JSON escape at i (a backslash), 0 when invalid; never reads at or past `end`. */
  private escapeLength(i: number, end: number): number {
    const next = i + 1 < end ? this.text.charAt(i + 1) : "";
    if (SIMPLE_ESCAPES.has(next)) return 2;
    if (next === "u" && this.hexAt(i + 2, 4, end)) return 6;
    return 0;
  }

  private hexAt(p: number, digits: number, end: number): boolean {
    if (p + digits > end) return false;
    return /^[0-9a-fA-F]+$/.test(this.text.slice(p, p + digits));
  }

  private expectEnd(p: number): void {
    if (!this.look.endsAfter(p)) {
      const extra = this.look.skipWs(p + 1);
      throw new ParseFailure(`unexpected text after the object at offset ${extra}: ${this.snippet(extra)}`);
    }
  }

  private trimEnd(start: number, end: number): number {
    let e = end;
    while (e > start && isJsonWhitespace(this.text.charCodeAt(e - 1))) e--;
    return e;
  }

  private code(p: number): number {
    return p < this.look.n ? this.text.charCodeAt(p) : -1;
  }

  private snippet(p: number): string {
    return snippet(this.text, p);
  }
}

/** Own data property, as JSON.parse creates: `__proto__` never reaches a prototype. */
function setOwn(target: JsonObject, key: string, value: Scalar): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}
