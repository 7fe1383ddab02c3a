// Error signatures: an error text with its volatile parts (numbers, paths, ids, addresses)
// replaced, so the same failure on different machines groups together.
import { isFailure, type Outcome } from "./outcome.ts";
const RULES: [RegExp, string][] = [
  [/\u001b\[[0-9;]*[A-Za-z]/g, ""],
  [/<ipv[46]>/g, "<ip>"],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<id>"],
  [/\bhttps?:\/\/[^\s"'<>]+/gi, "<url>"],
  [/(?:~|\.{1,2})?(?:\/[\w.@%+-]+){2,}\/?/g, "<path>"],
  [/\b[0-9a-f]{12,}\b/gi, "<hex>"],
  [/\b\d{1,2}:\d{2}(?::\d{2})?\b/g, "<time>"],
  [/\b\d{4}-\d{2}-\d{2}\b/g, "<date>"],
  [/\b(?:vm|ct|lxc)?\d+\b/gi, "<n>"],
  [/\s+/g, " "],
];

const MAX_SIGNATURE_LENGTH = 200;
/** Text the rules run over at a time, at least: whole lines, so long logs are read in few passes. */
const CHUNK = 1024;

/**
 * The signature keeps its first 200 characters, and no rule matches across a line break (the
 * whitespace rule aside, run again over the joined pieces): so the rules run over whole lines
 * only until that much is made. A client's 10 KiB log tail costs its first lines, not all of it;
 * the result is the same as over the whole text (test/unit/error-signature-reads-only-what-it-keeps.test.ts checks it).
 */
export function errorSignature(error: string | null): string | null {
  if (error === null) return null;
  let made = "";
  for (let start = 0; start < error.length; ) {
    const newline = error.indexOf("\n", start + CHUNK);
    const end = newline === -1 ? error.length : newline + 1;
    let piece = error.slice(start, end);
    for (const [pattern, replacement] of RULES) piece = piece.replace(pattern, replacement);
    made += piece;
    start = end;
    // Past the kept characters: a space at a line break ending them would be trimmed below.
    if (start < error.length && made.replace(/\s+/g, " ").trimStart().toLowerCase().length > MAX_SIGNATURE_LENGTH)
      break;
  }
  const s = made.replace(/\s+/g, " ").trim().toLowerCase().slice(0, MAX_SIGNATURE_LENGTH);
  return s === "" ? null : s;
}

/** A short stable id for a signature (two 32-bit FNV-1a hashes), used as a rollup key. */
export function signatureId(signature: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < signature.length; i++) {
    const c = signature.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 13);
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}

/**
 * The signature a record counts under in rollups, with its id: failed or blocked installs
 * (outcome.ts isFailure) with an error text only. The signature counts keep the failed ones; the
 * failure dimension keeps both, by outcome (rollup.ts).
 */
export function failureSignature(outcome: Outcome, error: string | null): { id: string; signature: string } | null {
  if (!isFailure(outcome)) return null;
  const signature = errorSignature(error);
  return signature === null ? null : { id: signatureId(signature), signature };
}

/** The id of failureSignature. */
export const failureSignatureId = (outcome: Outcome, error: string | null): string | null =>
  failureSignature(outcome, error)?.id ?? null;

/** What is known of one error signature across all time. */
export interface KnownSignature {
  id: string;
  signature: string;
  /** The first error text seen with it. */
  example: string;
  firstSeen: number;
  lastSeen: number;
  /** Apps that have failed with it, sorted. */
  apps: string[];
}

export interface Sighting {
  signature: string;
  example: string;
  firstSeen: number;
  lastSeen: number;
  apps: Set<string>;
}

/** Signatures seen in one write batch, merged into error_signatures in the same transaction. */
export class SignatureSightings {
  readonly seen = new Map<string, Sighting>();

  /** `error`, whose signature is `sig` (failureSignature: made once per write), was seen. */
  see({ id, signature }: { id: string; signature: string }, error: string, app: string | null, at: number): void {
    const s = this.seen.get(id);
    if (s) {
      s.firstSeen = Math.min(s.firstSeen, at);
      s.lastSeen = Math.max(s.lastSeen, at);
      if (app !== null) s.apps.add(app);
    } else {
      this.seen.set(id, {
        signature,
        example: error,
        firstSeen: at,
        lastSeen: at,
        apps: new Set(app === null ? [] : [app]),
      });
    }
  }
}
