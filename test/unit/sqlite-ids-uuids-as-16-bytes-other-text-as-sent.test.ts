// Ids as the SQLite engine stores them (src/store/sqlite/ids.ts): a canonical UUID as 16 bytes,
// anything else as its text, and back exactly.
import { expect, test } from "bun:test";
import { decodeId, encodeId } from "../../src/store/sqlite/ids.ts";

test("canonical UUIDs become 16 bytes and come back exactly", () => {
  for (let i = 0; i < 2000; i++) {
    const id = crypto.randomUUID();
    const stored = encodeId(id);
    expect(stored).toBeInstanceOf(Uint8Array);
    expect((stored as Uint8Array).length).toBe(16);
    expect(decodeId(stored)).toBe(id);
  }
  expect(encodeId("00000000-0000-4000-8000-000000000000")).toEqual(
    new Uint8Array([0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0]),
  );
});

test.each([
  ["an uppercase UUID (a client may send one)", "8D2E4F6A-0B1C-4D3E-9F5A-6B7C8D9E0F1A"],
  ["one digit short", "8d2e4f6a-0b1c-4d3e-9f5a-6b7c8d9e0f1"],
  ["no dashes", "8d2e4f6a0b1c4d3e9f5a6b7c8d9e0f1a"],
  ["a word", "fix-held"],
  ["empty", ""],
  ["a UUID with a space", "8d2e4f6a-0b1c-4d3e-9f5a-6b7c8d9e0f1 "],
])("%s stays text, as sent", (_, id) => {
  expect(encodeId(id)).toBe(id);
  expect(decodeId(id)).toBe(id);
});
