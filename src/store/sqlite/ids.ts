// Execution and install ids as the SQLite engine stores them: a canonical UUID (what the clients
// send: `cat /proc/sys/kernel/random/uuid`, lowercase) as its 16 bytes, any other id as its text.
// 16 bytes instead of 36, in the row and in its primary-key index: 40 bytes an execution.

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** A lowercase hex digit's value, or -1 (checked while decoding: a regular expression first cost as much again). */
const nibble = (c: number): number => (c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : -1);

export function encodeId(id: string): string | Uint8Array {
  if (id.length !== 36) return id;
  const out = new Uint8Array(16);
  for (let i = 0, j = 0; i < 16; i++, j += 2) {
    if (j === 8 || j === 13 || j === 18 || j === 23) {
      if (id.charCodeAt(j) !== 45) return id; // "-"
      j++;
    }
    const hi = nibble(id.charCodeAt(j));
    const lo = nibble(id.charCodeAt(j + 1));
    if (hi < 0 || lo < 0) return id;
    out[i] = (hi << 4) | lo;
  }
  return out;
}

export function decodeId(stored: string | Uint8Array): string {
  if (typeof stored === "string") return stored;
  let s = "";
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) s += "-";
    s += HEX[stored[i]!]!;
  }
  return s;
}
