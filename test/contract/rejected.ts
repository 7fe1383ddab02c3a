// The Store contract, the rejected-reports log: what a refusal or a repaired report leaves,
// paging, forgetting, replays, and the counts by reason the alert rules read.
import { describe, expect, test } from "bun:test";
import type { RejectReason } from "../../src/domain/rejection.ts";
import { DAY, HOUR } from "../../src/domain/time.ts";
import { bytes, EVERYTHING, type Harness, latestOf, MIN, one, PAST, rejectOp, startOp, updateOp } from "./harness.ts";

/** The contract's tests of this feature, in the suite of one engine (suite.ts). */
export function rejectedContract({ freshStore }: Harness): void {
  // -------------------------------------------------------------- the rejected-reports log

  describe("write reject and the rejected-reports log", () => {
    test("a rejection is logged with everything it carries; listRejected is newest first", async () => {
      const store = await freshStore();
      const body = new Uint8Array([0, 255, 123, 10, 200]); // not even UTF-8: kept byte for byte
      expect(
        await one(
          store,
          rejectOp(PAST, {
            endpoint: "updatestatus",
            reason: "invalid_field",
            field: "type",
            message: "type must be one of lxc, vm",
            randomId: "r1",
            body,
          }),
        ),
      ).toEqual({ kind: "logged" });
      await one(store, rejectOp(PAST + 1));
      const [newest, oldest] = await store.listRejected({ limit: 10 });
      expect(newest).toMatchObject({ reason: "invalid_json", receivedAt: PAST + 1 });
      expect(oldest).toMatchObject({
        endpoint: "updatestatus",
        reason: "invalid_field",
        field: "type",
        message: "type must be one of lxc, vm",
        randomId: "r1",
        receivedAt: PAST,
        result: null,
        replayedAt: null,
        replayResult: null,
      });
      expect([...oldest!.body]).toEqual([...body]);
      expect(newest!.id).toBeGreaterThan(oldest!.id);
    });

    test("headOnly: a refusal (and a repaired or already-final report's body) keeps the head of its body, with the whole body's size and hash", async () => {
      const store = await freshStore();
      const body = bytes(`{"random_id": "h1", ${"x".repeat(2000)}`);
      expect(await one(store, { ...rejectOp(PAST, { body }), headOnly: true })).toEqual({ kind: "logged" });
      const whole = bytes(`{"random_id": "h2", ${"y".repeat(2000)}`);
      await one(store, rejectOp(PAST + 1, { body: whole }));
      await one(store, startOp("h3", {}, PAST, { repairs: ["x"] }));
      await one(store, {
        ...updateOp("h3", "failed", "exit code 1", PAST + MIN),
        raw: bytes(`{"status": "failed", "pad": "${"z".repeat(1000)}"}`),
      });
      await one(store, {
        ...updateOp("h3", "done", null, PAST + 2 * MIN),
        raw: bytes(`{"status": "done", "pad": "${"z".repeat(1000)}"}`),
        headOnly: true,
      });
      const [final, repaired, kept, cut] = await store.listRejected({ limit: 10 });
      expect(repaired).toMatchObject({ reason: "repaired", bodyKept: true });
      expect(cut).toMatchObject({
        bodyKept: false,
        bodySize: body.byteLength,
        bodySha256: new Bun.CryptoHasher("sha256").update(body).digest("hex"),
      });
      expect([...cut!.body]).toEqual([...body.subarray(0, 256)]);
      expect(kept).toMatchObject({ bodyKept: true, bodySize: whole.byteLength });
      expect(final).toMatchObject({ reason: "already_final", bodyKept: false, bodySize: 1029 });
      expect(final!.body.byteLength).toBe(256);
    });

    test("`before` pages through the log, and `reason` filters it", async () => {
      const store = await freshStore();
      const reasons: RejectReason[] = ["invalid_json", "invalid_field", "payload_too_large"];
      await store.write(
        Array.from({ length: 9 }, (_, i) => rejectOp(PAST + i, { reason: reasons[i % 3]!, message: `m${i}` })),
      );
      const pages: string[][] = [];
      let before: number | undefined;
      for (;;) {
        const page = await store.listRejected({ limit: 4, before });
        if (page.length === 0) break;
        pages.push(page.map((e) => e.message));
        before = page.at(-1)!.id;
      }
      expect(pages).toEqual([["m8", "m7", "m6", "m5"], ["m4", "m3", "m2", "m1"], ["m0"]]);
      expect((await store.listRejected({ limit: 10, reason: "invalid_field" })).map((e) => e.message)).toEqual([
        "m7",
        "m4",
        "m1",
      ]);
      const second = await store.listRejected({ limit: 1, reason: "payload_too_large" });
      expect(
        (await store.listRejected({ limit: 10, reason: "payload_too_large", before: second[0]!.id })).map(
          (e) => e.message,
        ),
      ).toEqual(["m5", "m2"]);
      expect(await store.listRejected({ limit: 10, reason: "repaired" })).toEqual([]);
    });

    test("repaired reports are applied and logged raw with reason repaired and what their write came to", async () => {
      const store = await freshStore();
      const raw = (n: number) => bytes(`{"random_id": "rep${n}", "status": "installing",}`);
      expect(await one(store, startOp("rep1", {}, PAST, { repairs: ["trailing_comma"], raw: raw(1) }))).toEqual({
        kind: "created",
        outcome: "in_progress",
      });
      expect(
        await one(store, updateOp("rep1", "done", null, PAST + MIN, { repairs: ["unescaped_quote"], raw: raw(2) })),
      ).toEqual({ kind: "updated", outcome: "success" });
      expect(
        await one(store, updateOp("rep3", "done", null, PAST + 2 * MIN, { repairs: ["unescaped_quote"], raw: raw(3) })),
      ).toEqual({ kind: "held" });
      await one(store, startOp("plain", {}, PAST + 3 * MIN)); // strict JSON: not logged

      const log = await store.listRejected({ limit: 10 });
      expect(
        log.map((e) => ({
          reason: e.reason,
          result: e.result,
          randomId: e.randomId,
          endpoint: e.endpoint,
          receivedAt: e.receivedAt,
        })),
      ).toEqual([
        { reason: "repaired", result: "held", randomId: "rep3", endpoint: "updatestatus", receivedAt: PAST + 2 * MIN },
        { reason: "repaired", result: "updated", randomId: "rep1", endpoint: "updatestatus", receivedAt: PAST + MIN },
        { reason: "repaired", result: "created", randomId: "rep1", endpoint: "upload", receivedAt: PAST },
      ]);
      expect(log.map((e) => new TextDecoder().decode(e.body))).toEqual(
        [3, 2, 1].map((n) => new TextDecoder().decode(raw(n))),
      );
      expect((await store.listRejected({ limit: 10, reason: "repaired" })).length).toBe(3);
      expect((await latestOf(store, "rep1"))!.repaired).toBe(true);
      expect((await latestOf(store, "plain"))!.repaired).toBe(false);
      // A held update that needed repair marks the record it is applied to.
      await one(store, startOp("rep3", {}, PAST + 4 * MIN));
      expect((await latestOf(store, "rep3"))!.repaired).toBe(true);
    });

    // A duplicate changes nothing, repaired or not, so it is not logged (docs/decisions/2026-11-21-ingestion.md): a client that re-sends the same broken body fills no log.
    test("a repaired duplicate start is not logged again; the repaired original is", async () => {
      const store = await freshStore();
      const raw = bytes(`{"random_id": "rd", "status": "installing",}`);
      expect(await one(store, startOp("rd", {}, PAST, { repairs: ["trailing_comma"], raw }))).toEqual({
        kind: "created",
        outcome: "in_progress",
      });
      expect(await one(store, startOp("rd", {}, PAST + MIN, { repairs: ["trailing_comma"], raw }))).toEqual({
        kind: "duplicate",
      });
      expect(await store.listRejected({ limit: 10 })).toEqual([
        expect.objectContaining({ reason: "repaired", result: "created", randomId: "rd", body: raw }),
      ]);
    });

    test("forget-rejected drops log entries received before a time and counts them", async () => {
      const store = await freshStore();
      await store.write([rejectOp(PAST), rejectOp(PAST + MIN), rejectOp(PAST + 2 * MIN), rejectOp(PAST + 3 * MIN)]);
      await one(store, startOp("r", {}, PAST, { repairs: ["trailing_comma"] })); // a repaired entry ages like any other
      expect(await one(store, { kind: "forget-rejected", before: PAST + 2 * MIN, at: PAST + DAY })).toEqual({
        kind: "forgotten",
        count: 3,
      });
      expect((await store.listRejected({ limit: 10 })).map((e) => e.receivedAt)).toEqual([
        PAST + 3 * MIN,
        PAST + 2 * MIN,
      ]);
      expect(await one(store, { kind: "forget-rejected", before: PAST + 2 * MIN, at: PAST + DAY })).toEqual({
        kind: "forgotten",
        count: 0,
      });
      expect((await store.countBefore(EVERYTHING.to)).rejected).toBe(2);
      expect(await latestOf(store, "r")).toBeDefined(); // only the log forgets
    });

    test("mark-replayed, replayCandidates and countReplayed", async () => {
      const store = await freshStore();
      const RETRY = "still invalid";
      const reasons = ["invalid_json", "invalid_field"] as const;
      await store.write([
        rejectOp(PAST, { reason: "invalid_json", message: "j1" }),
        rejectOp(PAST + 1, { reason: "invalid_field", message: "f1" }),
        rejectOp(PAST + 2, { reason: "already_final", message: "a1" }),
        rejectOp(PAST + 3, { reason: "invalid_json", message: "j2" }),
        rejectOp(PAST + 4, { reason: "invalid_field", message: "f2" }),
        rejectOp(PAST + 5, { reason: "invalid_json", message: "j3" }),
      ]);
      const byMessage = new Map((await store.listRejected({ limit: 10 })).map((e) => [e.message, e.id]));
      const id = (m: string) => byMessage.get(m)!;
      const candidates = async (afterId = 0, limit = 10, rs: readonly RejectReason[] = reasons) =>
        (await store.replayCandidates({ reasons: rs, retryPrefix: RETRY, afterId, limit })).map((e) => e.message);

      expect(await candidates()).toEqual(["j1", "f1", "j2", "f2", "j3"]); // oldest first, of the reasons asked
      expect(await candidates(id("f1"))).toEqual(["j2", "f2", "j3"]);
      expect(await candidates(0, 2)).toEqual(["j1", "f1"]);
      expect(await candidates(0, 10, ["invalid_field"])).toEqual(["f1", "f2"]);
      expect(await store.countReplayed(reasons, RETRY)).toBe(0);

      const at = PAST + DAY;
      expect(
        await store.write([
          { kind: "mark-replayed", rejectedId: id("j1"), result: "created", at },
          { kind: "mark-replayed", rejectedId: id("f1"), result: `${RETRY}: type must be one of lxc, vm`, at },
          { kind: "mark-replayed", rejectedId: id("j2"), result: "duplicate", at },
          { kind: "mark-replayed", rejectedId: id("a1"), result: "created", at },
        ]),
      ).toEqual([{ kind: "marked" }, { kind: "marked" }, { kind: "marked" }, { kind: "marked" }]);
      const j1 = (await store.listRejected({ limit: 10 })).find((e) => e.message === "j1")!;
      expect({ replayedAt: j1.replayedAt, replayResult: j1.replayResult }).toEqual({
        replayedAt: at,
        replayResult: "created",
      });

      // Replayed for good leave the candidates; "still invalid" ones are tried again.
      expect(await candidates()).toEqual(["f1", "f2", "j3"]);
      expect(await store.countReplayed(reasons, RETRY)).toBe(2);
      expect(await store.countReplayed(["invalid_json"], RETRY)).toBe(2);
      expect(await store.countReplayed(["invalid_field"], RETRY)).toBe(0);
      expect(await store.countReplayed(["already_final"], RETRY)).toBe(1);

      // Marked again: the last mark counts.
      await one(store, { kind: "mark-replayed", rejectedId: id("f1"), result: "updated", at: at + 1 });
      expect(await candidates()).toEqual(["f2", "j3"]);
      expect(await store.countReplayed(reasons, RETRY)).toBe(3);
    });

    // Not SQL LIKE (case-insensitive in SQLite, _ and % wildcards): every engine must agree.
    test("retryPrefix is a plain, case-sensitive prefix", async () => {
      const store = await freshStore();
      await store.write([rejectOp(PAST, { message: "upper" }), rejectOp(PAST + 1, { message: "wild" })]);
      const [wild, upper] = await store.listRejected({ limit: 10 });
      await store.write([
        { kind: "mark-replayed", rejectedId: upper!.id, result: "STILL INVALID, shouting", at: PAST + DAY },
        { kind: "mark-replayed", rejectedId: wild!.id, result: "stillXinvalid", at: PAST + DAY },
      ]);
      expect(
        await store.replayCandidates({
          reasons: ["invalid_json"],
          retryPrefix: "still invalid",
          afterId: 0,
          limit: 10,
        }),
      ).toEqual([]);
      expect(await store.countReplayed(["invalid_json"], "still invalid")).toBe(2);
      expect(await store.countReplayed(["invalid_json"], "still_invalid")).toBe(2);
    });

    // The alert rules' window.
    const T = PAST + 10 * DAY;
    test("rejectedCounts counts the log by reason in a window", async () => {
      const store = await freshStore();
      await store.write([
        rejectOp(T - 1),
        rejectOp(T),
        rejectOp(T + 10, { reason: "invalid_field", field: "type", message: "bad type" }),
        rejectOp(T + 20, { reason: "invalid_field", field: "type", message: "bad type" }),
        rejectOp(T + HOUR),
      ]);
      await one(store, startOp("rep", {}, T + 30, { repairs: ["unescaped quote"] }));
      expect(await store.rejectedCounts(T, T + HOUR)).toEqual({ invalid_json: 1, invalid_field: 2, repaired: 1 });
      expect(await store.rejectedCounts(T + 2 * HOUR, T + 3 * HOUR)).toEqual({});
    });
  });
}
