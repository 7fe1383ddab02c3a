// Masks IP addresses inside free text (error messages can carry a user's LAN or public address).
import { isIPv4, isIPv6 } from "node:net";

export const IPV4_MASK = "<ipv4>";
export const IPV6_MASK = "<ipv6>";

// Dotted quads; that no digit or dot comes before and no digit after (through dots) is judged
// by maskV4: a lookbehind at the head of the expression tried it at every character of a text.
const IPV4 = /(?:\d{1,3}\.){3}\d{1,3}/g;
const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const DOT = 46;

function maskV4(match: string, offset: number, text: string): string {
  const before = text.charCodeAt(offset - 1);
  // Inside a longer run of digits and dots: version numbers, not addresses (and a run is walked
  // to its end below only from its start, so a long run costs its length once).
  if (before === DOT || isDigit(before)) return match;
  for (let i = offset + match.length; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isDigit(c)) return match;
    if (c !== DOT) break;
  }
  return isIPv4(match) ? IPV4_MASK : match;
}
// Each run of hex digits, colons and dots that holds a colon is taken whole, once (the capture
// inside a lookahead cannot backtrack, so this is linear in the text), then judged by maskV6. A
// zone (%eth0) is masked with its address. Runs without a colon (every number and hex word of a
// log) are passed over in the regex, not handed to maskV6 one by one.
const V6_RUN = /(?<![\w:.%])(?=[0-9A-Fa-f.]*:)(?=([0-9A-Fa-f:.]+))\1(%\w+)?/g;
const LONGEST_V6 = 45;

function maskV6(match: string, run: string, _zone: string | undefined, offset: number, text: string): string {
  if (/\w/.test(text.charAt(offset + match.length))) return match; // part of a longer word
  const trailing = /\.+$/.exec(run)?.[0] ?? ""; // a sentence's full stop is not part of it
  const bare = run.slice(0, run.length - trailing.length);
  const colons = bare.split(":").length - 1;
  // Requiring "::" or 7 colons keeps clock times (12:34:56) and MAC addresses out; a lone "::"
  // is pacman's prompt far more often than the unspecified address.
  const plausible = bare !== "::" && (bare.includes("::") || colons >= 7 || (colons >= 6 && bare.includes(".")));
  return plausible && bare.length <= LONGEST_V6 && isIPv6(bare) ? IPV6_MASK + trailing : match;
}

/** Whether a digit, a dot and a digit follow each other somewhere: every dotted quad has that. */
function hasDigitDotDigit(text: string): boolean {
  for (let i = text.indexOf("."); i > 0; i = text.indexOf(".", i + 1)) {
    if (isDigit(text.charCodeAt(i - 1)) && isDigit(text.charCodeAt(i + 1))) return true;
  }
  return false;
}

const isHexOrDot = (c: number): boolean => isDigit(c) || c === DOT || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);

/**
 * Whether a run could pass maskV6's test ("::", or six colons in one run of hex digits, colons
 * and dots): a log's clock times (12:34:56) never do, and then the runs are not taken at all.
 */
function mayHoldV6(text: string): boolean {
  if (text.includes("::")) return true;
  let colons = 0;
  let last = -1;
  for (let i = text.indexOf(":"); i >= 0; i = text.indexOf(":", i + 1)) {
    let sameRun = last >= 0;
    for (let j = last + 1; sameRun && j < i; j++) sameRun = isHexOrDot(text.charCodeAt(j));
    colons = sameRun ? colons + 1 : 1;
    if (colons >= 6) return true;
    last = i;
  }
  return false;
}

export function maskIpAddresses(text: string): string {
  const masked = mayHoldV6(text) ? text.replace(V6_RUN, maskV6) : text;
  // A log tail of 10 KiB has few dots and many digits: the dots are looked at first.
  return hasDigitDotDigit(masked) ? masked.replace(IPV4, maskV4) : masked;
}
