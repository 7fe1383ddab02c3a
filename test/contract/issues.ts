// The Store contract, issue links: failure signatures and the tracker issues opened for them.
import { describe, expect, test } from "bun:test";
import { DAY } from "../../src/domain/time.ts";
import type { Store } from "../../src/store/contract/store.ts";
import { type Harness, one, PAST } from "./harness.ts";

/** The contract's tests of this feature, in the suite of one engine (suite.ts). */
export function issuesContract({ database, freshStore }: Harness): void {
  // -------------------------------------------------------------- issue links

  describe("issue links", () => {
    const T = PAST + 20 * DAY;
    const SIG = "00112233aabbccdd";
    const issue = (number: number, how: "created" | "found" = "created") => ({
      tracker: "gitea",
      repo: "community/ProxmoxVE",
      number,
      url: `https://git.example.org/community/ProxmoxVE/issues/${number}`,
      title: `jellyfin: exit 100 (#${number})`,
      how,
    });
    const claim = (store: Store, owner: string, at = T, signature = SIG) =>
      one(store, { kind: "issue-claim", signature, owner, leaseMs: 60_000, at });
    const settle = (store: Store, owner: string, link: ReturnType<typeof issue> | null, at = T, signature = SIG) =>
      one(store, { kind: "issue-settle", signature, owner, link, at });

    test("a claim keeps others out until its lease ends; the same owner may claim again", async () => {
      const store = await freshStore();
      expect(await claim(store, "a")).toEqual({ kind: "issue-claimed" });
      expect(await claim(store, "b", T + 1000)).toEqual({ kind: "issue-busy", until: T + 60_000 });
      expect(await claim(store, "a", T + 2000)).toEqual({ kind: "issue-claimed" });
      expect(await claim(store, "b", T + 61_000)).toEqual({ kind: "issue-busy", until: T + 62_000 });
      expect(await claim(store, "b", T + 62_000)).toEqual({ kind: "issue-claimed" });
      // A claim is not a link.
      expect(await store.issueLinks([SIG])).toEqual([]);
      expect(await store.issueLinks()).toEqual([]);
    });

    test("a settled claim is a link; the first link stays, whoever settles later, and a claim finds it", async () => {
      const store = await freshStore();
      await claim(store, "a");
      const first = { ...issue(41), signature: SIG, linkedAt: T + 5 };
      expect(await settle(store, "a", issue(41), T + 5)).toEqual({ kind: "issue-linked", link: first });
      expect(await store.issueLinks([SIG])).toEqual([first]);
      expect(await claim(store, "b", T + 10)).toEqual({ kind: "issue-linked", link: first });
      expect(await settle(store, "b", issue(42), T + 20)).toEqual({ kind: "issue-linked", link: first });
      expect(await settle(store, "a", null, T + 30)).toEqual({ kind: "issue-released" });
      expect(await store.issueLinks([SIG])).toEqual([first]);
    });

    test("a release frees only the owner's claim", async () => {
      const store = await freshStore();
      await claim(store, "a");
      expect(await settle(store, "b", null)).toEqual({ kind: "issue-released" });
      expect(await claim(store, "b", T + 1)).toMatchObject({ kind: "issue-busy" });
      await settle(store, "a", null, T + 2);
      expect(await claim(store, "b", T + 3)).toEqual({ kind: "issue-claimed" });
    });

    test("listing: every link newest first, or those of some signatures; forget removes a link or a claim", async () => {
      const store = await freshStore();
      const sigs = ["1111111111111111", "2222222222222222", "3333333333333333"] as const;
      for (const [i, sig] of sigs.entries()) {
        await claim(store, "a", T + i, sig);
        await settle(store, "a", issue(i + 1, i === 1 ? "found" : "created"), T + 100 + i, sig);
      }
      await claim(store, "a", T, "4444444444444444");
      expect((await store.issueLinks()).map((l) => [l.signature, l.number, l.how])).toEqual([
        [sigs[2], 3, "created"],
        [sigs[1], 2, "found"],
        [sigs[0], 1, "created"],
      ]);
      expect(
        (await store.issueLinks([sigs[0], "4444444444444444", "ffffffffffffffff"])).map((l) => l.signature),
      ).toEqual([sigs[0]]);
      expect(await store.issueLinks([])).toEqual([]);
      expect(await one(store, { kind: "issue-forget", signature: sigs[1], at: T })).toEqual({
        kind: "issue-forgotten",
        found: true,
      });
      expect(await one(store, { kind: "issue-forget", signature: "4444444444444444", at: T })).toEqual({
        kind: "issue-forgotten",
        found: true,
      });
      expect(await one(store, { kind: "issue-forget", signature: sigs[1], at: T })).toEqual({
        kind: "issue-forgotten",
        found: false,
      });
      expect((await store.issueLinks()).map((l) => l.signature)).toEqual([sigs[2], sigs[0]]);
      // A forgotten signature can be claimed and linked anew.
      expect(await claim(store, "b", T + 500, sigs[1])).toEqual({ kind: "issue-claimed" });
    });

    test("links are kept across a close and reopen", async () => {
      const db = await database();
      const store = await db.open();
      await claim(store, "a");
      await settle(store, "a", issue(7));
      await store.close();
      const again = await db.open();
      expect(await again.issueLinks([SIG])).toEqual([{ ...issue(7), signature: SIG, linkedAt: T }]);
      expect(await claim(again, "b")).toMatchObject({ kind: "issue-linked" });
    });
  });
}
