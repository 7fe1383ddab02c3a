// Execution and install ids as the SQLite engine stores them: a canonical UUID (what the clients
// send: `cat /proc/sys/kernel/random/uuid`, lowercase) as its 16 bytes, any other id as its text.
// 16 bytes instead of 36, in the row and in its primary-key index: 40 bytes an execution.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** A lowercase hex digit's value. */
const nibble = (c: number): number => (c <= 57 ? c - 48 : c - 87);

export function encodeId(id: string): string | Uint8Array {
  if (id.length !== 36 || !UUID.test(id)) return id;
  const out = new Uint8Array(16);
  for (let i = 0, j = 0; i < 16; i++, j += 2) {
    if (id.charCodeAt(j) === 45) j++; // "-"
    out[i] = (nibble(id.charCodeAt(j)) << 4) | nibble(id.charCodeAt(j + 1));
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
