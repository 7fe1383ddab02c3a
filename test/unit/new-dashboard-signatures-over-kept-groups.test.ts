// /api/new's "why" list over a window's kept signature groups and the groups its open hours
// changed (Failures.under): the first groups from the kept top and the changed ones must be the
// first of all, whether the changes raise counts, lower them (a type's cells take other apps'
// failures out) or end a group, and however many groups changed.
import { expect, test } from "bun:test";
import { signatureGroups, type Failures, type SignatureGroup } from "../../src/read/community/new-dashboard-routes.ts";

/** A small deterministic generator: the same groups on every run. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s / 2_147_483_648;
  };
}

const group = (id: string, count: number): SignatureGroup => ({
  category: id.length % 2 === 0 ? "network" : "dependency",
  exit_code: id.length % 3,
  id,
  count,
  app: "app",
  apps: null,
});

/** Every group, the changed ones over the kept, sorted outright: what the selection must equal. */
function sorted(f: Failures, limit: number) {
  const all = new Map(f.under);
  for (const [k, g] of f.bySignature) all.set(k, g);
  return [...all.values()]
    .filter((g) => g.count !== 0)
    .sort(
      (a, b) =>
        b.count - a.count ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) ||
        a.exit_code - b.exit_code ||
        (a.category < b.category ? -1 : a.category > b.category ? 1 : 0),
    )
    .slice(0, limit)
    .map((g) => g.id);
}

test.each([0, 1, 5, 40, 255, 256, 257, 900])("%i groups changed over 2,000 kept", (changes) => {
  const next = random(changes + 1);
  const under = new Map<string, SignatureGroup>();
  // Few distinct counts: many ties, broken by the whole group.
  for (let i = 0; i < 2000; i++) under.set(`g${i}`, group(`sig-${i}`, 1 + Math.floor(next() * 60)));
  const changed = new Map<string, SignatureGroup>();
  for (let i = 0; i < changes; i++) {
    const k = `g${Math.floor(next() * 2200)}`; // some new groups, most kept ones
    const before = under.get(k);
    const roll = next();
    // Raised, lowered (to the top's level or below), or gone (count 0).
    const count =
      roll < 0.4 ? (before?.count ?? 0) + 1 + Math.floor(next() * 40) : roll < 0.8 ? Math.floor(next() * 30) : 0;
    changed.set(k, group(before?.id ?? `sig-new-${k}`, count));
  }
  const f: Failures = { byCode: new Map(), bySignature: changed, under };
  for (const limit of [30, 5]) {
    expect(signatureGroups(f, limit).map((g) => g.id)).toEqual(sorted(f, limit));
    // Asked again (the kept top reused): the same.
    expect(signatureGroups(f, limit).map((g) => g.id)).toEqual(sorted(f, limit));
  }
  // Without kept groups under them.
  const alone: Failures = { byCode: new Map(), bySignature: new Map([...under, ...changed]), under: null };
  expect(signatureGroups(alone).map((g) => g.id)).toEqual(sorted(alone, 30));
});

test.each([1, 30, 200, 256])("the %i first kept groups lowered: those after them come up", (lowered) => {
  const under = new Map<string, SignatureGroup>();
  for (let i = 0; i < 1000; i++) under.set(`g${i}`, group(`sig-${String(i).padStart(4, "0")}`, 1000 - i));
  const changed = new Map<string, SignatureGroup>();
  for (let i = 0; i < lowered; i++) changed.set(`g${i}`, group(`sig-${String(i).padStart(4, "0")}`, i % 2));
  const f: Failures = { byCode: new Map(), bySignature: changed, under };
  const got = signatureGroups(f).map((g) => g.id);
  expect(got).toEqual(sorted(f, 30));
  expect(got[0]).toBe(`sig-${String(lowered).padStart(4, "0")}`);
});
