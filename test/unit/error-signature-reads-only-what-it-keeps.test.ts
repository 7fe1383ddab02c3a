// errorSignature reads a long text only as far as its 200 kept characters need (whole lines at a
// time). Its rollup keys must not change by that: it is checked here against the rules run over
// the whole text, on texts built to sit on every edge (line breaks, whitespace runs across them,
// tokens at the cut, case mappings that depend on what follows, empty lines by the thousand).
import { describe, expect, test } from "bun:test";
import { errorSignature } from "../../src/domain/error-signature.ts";
import { prng } from "../helpers/random.ts";

/** The rules of src/domain/error-signature.ts over the whole text, as they were first written. */
function wholeText(error: string): string | null {
  const rules: [RegExp, string][] = [
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
  let s = error;
  for (const [pattern, replacement] of rules) s = s.replace(pattern, replacement);
  s = s.trim().toLowerCase().slice(0, 200);
  return s === "" ? null : s;
}

const PIECES = [
  "apt-get",
  "install",
  "-y",
  "E:",
  "failed",
  "ΟΔΟΣ",
  "Σ",
  "İstanbul",
  "ǅ",
  "ß",
  "\u001b[01;31m",
  "\u001b[m",
  "✖",
  "/usr/lib/x86_64-linux-gnu/libssl.so.3",
  "/a",
  "~/b/c",
  "../x/y/",
  "https://deb.debian.org/debian/pool/main",
  "http://[::1]:8006/api",
  "<ipv4>",
  "<ipv6>",
  "9f0c6f4e-1b2a-4c3d-8e9f-0a1b2c3d4e5f",
  "deadbeefcafe0123",
  "12:34",
  "01:02:03",
  "2026-11-25",
  "vm100",
  "CT 101",
  "lxc7",
  "42",
  "3.14",
  "exit_code=100",
  "|",
  "---",
  " ",
  "  ",
  "\t",
  "\n",
  "\n\n",
  "\r\n",
  " \n ",
  "\n   \n",
  "\u00a0",
  "\u2028",
];

function randomText(random: () => number): string {
  const kind = random();
  if (kind < 0.05) return "\n".repeat(Math.floor(random() * 5000)) + "tail";
  if (kind < 0.1)
    return " ".repeat(Math.floor(random() * 3000)) + "\n".repeat(3) + "x".repeat(Math.floor(random() * 3000));
  const n = Math.floor(random() * (random() < 0.3 ? 4000 : 300));
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(PIECES[Math.floor(random() * PIECES.length)]!, random() < 0.6 ? " " : "");
  return parts.join("");
}

describe("errorSignature reads only what its 200 characters need", () => {
  test("the same signature as the rules over the whole text, on 3,000 texts built on the edges", () => {
    const random = prng(20261125);
    const differ: { text: string; got: string | null; want: string | null }[] = [];
    let long = 0;
    for (let i = 0; i < 3000; i++) {
      const text = randomText(random);
      if (text.length > 2048) long++;
      const got = errorSignature(text);
      const want = wholeText(text);
      if (got !== want) differ.push({ text: text.slice(0, 300), got, want });
    }
    expect(differ.slice(0, 3)).toEqual([]);
    expect(long).toBeGreaterThan(300); // the cut was really exercised
  });

  test("a client's log tail: the signature of its head, read in one piece of lines", () => {
    const lines = Array.from(
      { length: 90 },
      (_, l) =>
        `[10:${String(l % 60).padStart(2, "0")}:00] step ${l} of build 1: compiling module_${l}.c -> module_${l}.o`,
    );
    const text = `exit_code=100 | APT: package installation failed | at line 212: apt-get install -y libssl-dev\n---\n${lines.join("\n")}`;
    expect(errorSignature(text)).toBe(wholeText(text));
    expect(errorSignature(text)).toStartWith(
      "exit_code=<n> | apt: package installation failed | at line <n>: apt-get install -y libssl-dev --- [<time>] step <n> of build <n>: compiling module_0.c",
    );
    // Pieces of lines that make about 200 characters (colour codes vanish, blanks collapse), so
    // the reading stops, or not, right where the kept characters end; whitespace across the cut.
    const ansi = "\u001b[0;32m".repeat(120);
    for (let visible = 180; visible < 220; visible++) {
      for (const tail of ["Σ next line", "   spaced next", "\n\n  ", "x".repeat(3000)]) {
        const edge = `${ansi}${"w".repeat(visible - 1)}Σ${" ".repeat(visible % 3)}\n${tail}\n${ansi}more`;
        expect({ visible, tail: tail.slice(0, 12), got: errorSignature(edge) }).toEqual({
          visible,
          tail: tail.slice(0, 12),
          got: wholeText(edge),
        });
      }
    }
    const spaced = `a${" ".repeat(2000)}\n  b`;
    expect(errorSignature(spaced)).toBe("a b");
  });
});
