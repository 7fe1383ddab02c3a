// An error signature's stored apps list is searched as text (store/common/signature-apps.ts): for
// every list of names built from the characters that matter to JSON ( " \ , [ ] ) and every such
// name, the search answers what the parsed list does, and a merge lists the union, sorted.
import { describe, expect, test } from "bun:test";
import { holds, withApps } from "../../src/store/common/signature-apps.ts";
import { prng } from "../helpers/random.ts";

const ALPHABET = ['"', "\\", ",", "[", "]", "a", "\n"];
/** Every name of one to three characters of ALPHABET. */
const NAMES = (() => {
  const out: string[] = [];
  let level = [""];
  for (let n = 1; n <= 3; n++) {
    level = level.flatMap((s) => ALPHABET.map((c) => s + c));
    out.push(...level);
  }
  return out;
})();

describe("an error signature's apps, found in their stored text", () => {
  test("holds answers what the parsed list answers, for every name of 1-3 JSON-special characters", () => {
    const next = prng(27);
    for (let round = 0; round < 300; round++) {
      const size = Math.floor(next() * 6);
      const list = [...new Set(Array.from({ length: size }, () => NAMES[Math.floor(next() * NAMES.length)]!))].sort();
      const text = JSON.stringify(list);
      for (const name of NAMES) {
        if (holds(text, name) !== list.includes(name))
          throw new Error(`holds(${text}, ${JSON.stringify(name)}) is ${holds(text, name)}`);
      }
    }
  });

  test("a list that holds every app is not written again; otherwise the union, sorted", () => {
    expect(withApps(JSON.stringify(["docker", "nginx"]), new Set(["nginx"]))).toBeNull();
    expect(withApps("[]", new Set<string>())).toBeNull();
    expect(withApps(JSON.stringify(["docker", "nginx"]), new Set(["zabbix", "nginx", "a,b"]))).toBe(
      JSON.stringify(["a,b", "docker", "nginx", "zabbix"]),
    );
    expect(withApps("[]", ["nginx"])).toBe('["nginx"]');
  });
});
