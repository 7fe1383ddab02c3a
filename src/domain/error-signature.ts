// Error signatures: an error text with its volatile parts (numbers, paths, ids, addresses)
// replaced, so the same failure on different machines groups together.
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

export function errorSignature(error: string | null): string | null {
  if (error === null) return null;
  let s = error;
  for (const [pattern, replacement] of RULES) s = s.replace(pattern, replacement);
  s = s.trim().toLowerCase().slice(0, MAX_SIGNATURE_LENGTH);
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

/** The signature id a record counts under in rollups: failed installs with an error text only. */
export function failureSignatureId(outcome: string, error: string | null): string | null {
  if (outcome !== "failed") return null;
  const signature = errorSignature(error);
  return signature === null ? null : signatureId(signature);
}

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

  see(error: string, app: string | null, at: number): void {
    const signature = errorSignature(error);
    if (signature === null) return;
    const id = signatureId(signature);
    const s = this.seen.get(id);
    if (s) {
      s.firstSeen = Math.min(s.firstSeen, at);
      s.lastSeen = Math.max(s.lastSeen, at);
      if (app !== null) s.apps.add(app);
    } else {
      this.seen.set(id, { signature, example: error, firstSeen: at, lastSeen: at, apps: new Set(app === null ? [] : [app]) });
    }
  }
}
