// The Store contract, alerts: state, history and the message queue.
import { describe, expect, test } from "bun:test";
import { DAY, HOUR } from "../../src/domain/time.ts";
import type { AlertSend, AlertTransition } from "../../src/store/contract/alerts.ts";
import type { WriteOp } from "../../src/store/contract/store.ts";
import { type Harness, one, PAST } from "./harness.ts";

/** The contract's tests of this feature, in the suite of one engine (suite.ts). */
export function alertsContract({ database, freshStore }: Harness): void {
  // -------------------------------------------------------------- alerts

  describe("alerts", () => {
    const T = PAST + 10 * DAY;
    const msg = (text: string) => JSON.stringify({ title: text });
    const firing = (
      rule: string,
      subject: string,
      channels: string[],
      heldBack: AlertTransition["heldBack"] = null,
    ): AlertTransition => ({
      rule,
      subject,
      status: "firing",
      message: msg(`${rule} ${subject} firing`),
      channels,
      heldBack,
    });
    const resolved = (
      rule: string,
      subject: string,
      channels: string[],
      heldBack: AlertTransition["heldBack"] = null,
    ): AlertTransition => ({
      rule,
      subject,
      status: "resolved",
      message: msg(`${rule} ${subject} resolved`),
      channels,
      heldBack,
    });
    const round = (
      at: number,
      transitions: AlertTransition[],
      sends: AlertSend[] = [],
      rules: { rule: string; summary: string }[] = [],
    ): WriteOp => ({ kind: "alert-round", at, rules, transitions, sends });

    test("a round records each transition as a history entry, its state, and a message queued per channel", async () => {
      const store = await freshStore();
      const r = await one(
        store,
        round(
          T,
          [firing("spike", "app=jellyfin", ["ntfy", "mail"]), firing("quiet", "", [], "silenced")],
          [],
          [
            { rule: "spike", summary: "1 firing" },
            { rule: "quiet", summary: "no reports for 7h" },
          ],
        ),
      );
      expect(r.kind).toBe("alert-recorded");
      if (r.kind !== "alert-recorded") return;
      expect(r.events).toHaveLength(2);
      const [spikeId, quietId] = r.events as [number, number];
      expect(await store.alertStates()).toEqual([
        { rule: "quiet", subject: "", status: "firing", since: T, eventId: quietId, notified: false, lastSentAt: null },
        {
          rule: "spike",
          subject: "app=jellyfin",
          status: "firing",
          since: T,
          eventId: spikeId,
          notified: true,
          lastSentAt: T,
        },
      ]);
      expect(await store.alertRuleMarks()).toEqual([
        { rule: "quiet", silencedUntil: null, evaluatedAt: T, summary: "no reports for 7h" },
        { rule: "spike", silencedUntil: null, evaluatedAt: T, summary: "1 firing" },
      ]);
      const history = await store.alertHistory({ limit: 10 });
      expect(history.map((e) => [e.id, e.rule, e.status, e.at, e.notifiedAt, e.heldBack])).toEqual([
        [quietId, "quiet", "firing", T, null, "silenced"],
        [spikeId, "spike", "firing", T, T, null],
      ]);
      expect(history[1]!.message).toBe(msg("spike app=jellyfin firing"));
      expect(history[1]!.deliveries).toEqual([
        { channel: "ntfy", state: "pending", attempts: 0, lastError: null, sentAt: null },
        { channel: "mail", state: "pending", attempts: 0, lastError: null, sentAt: null },
      ]);
      expect(await store.alertQueue()).toEqual([
        { channel: "mail", pending: 1 },
        { channel: "ntfy", pending: 1 },
      ]);
      const due = await store.alertDue(T, 10);
      expect(due.map((d) => [d.channel, d.eventId, d.message, d.nextAt, d.attempts, d.state])).toEqual([
        ["ntfy", spikeId, msg("spike app=jellyfin firing"), T, 0, "pending"],
        ["mail", spikeId, msg("spike app=jellyfin firing"), T, 0, "pending"],
      ]);
      expect(await store.alertDue(T - 1, 10)).toEqual([]);
      // Paging and one rule's history.
      expect((await store.alertHistory({ limit: 10, before: quietId })).map((e) => e.id)).toEqual([spikeId]);
      expect((await store.alertHistory({ limit: 10, rule: "quiet" })).map((e) => e.id)).toEqual([quietId]);
    });

    test("a resolve keeps the time of the last firing sent; a firing held back is sent later, once", async () => {
      const store = await freshStore();
      await one(store, round(T, [firing("spike", "", ["hook"])]));
      const r = await one(store, round(T + HOUR, [resolved("spike", "", ["hook"])]));
      const [state] = await store.alertStates();
      expect(state).toMatchObject({ status: "ok", since: T + HOUR, notified: true, lastSentAt: T });
      if (r.kind === "alert-recorded") expect(state!.eventId).toBe(r.events[0]!);
      // Fires again within the cooldown: recorded, held back.
      await one(store, round(T + 2 * HOUR, [firing("spike", "", [], "cooldown")]));
      expect((await store.alertStates())[0]).toMatchObject({ status: "firing", notified: false, lastSentAt: T });
      // The cooldown ended and it still fires: sent now, and only once.
      const send: AlertSend = { rule: "spike", subject: "", message: msg("late"), channels: ["hook"] };
      await one(store, round(T + 3 * HOUR, [], [send]));
      await one(store, round(T + 4 * HOUR, [], [send]));
      expect((await store.alertStates())[0]).toMatchObject({
        status: "firing",
        notified: true,
        lastSentAt: T + 3 * HOUR,
        since: T + 2 * HOUR,
      });
      const [latest] = await store.alertHistory({ limit: 1 });
      expect(latest).toMatchObject({
        status: "firing",
        at: T + 2 * HOUR,
        notifiedAt: T + 3 * HOUR,
        heldBack: "cooldown",
      });
      expect(latest!.deliveries.map((d) => d.channel)).toEqual(["hook"]);
      expect((await store.alertDue(T + 5 * HOUR, 10)).map((d) => d.message)).toEqual([
        msg("spike  firing"),
        msg("spike  resolved"),
        msg("late"),
      ]);
      // A send for an alert that does not fire, or is unknown, does nothing.
      await one(store, round(T + 5 * HOUR, [resolved("spike", "", ["hook"])], [{ ...send, subject: "nobody" }]));
      await one(store, round(T + 6 * HOUR, [], [send]));
      expect(await store.alertQueue()).toEqual([{ channel: "hook", pending: 4 }]);
    });

    test("deliveries: sent, retried later, failed for good; a message marked already stays as it is", async () => {
      const store = await freshStore();
      await one(store, round(T, [firing("spike", "", ["a", "b", "c"])]));
      const [a, b, c] = await store.alertDue(T, 10);
      expect(
        await one(store, {
          kind: "alert-delivery",
          id: a!.id,
          result: "sent",
          error: null,
          nextAt: null,
          at: T + 1000,
        }),
      ).toEqual({ kind: "alert-delivery-marked", found: true });
      expect(
        await one(store, {
          kind: "alert-delivery",
          id: b!.id,
          result: "retry",
          error: "connection refused",
          nextAt: T + 60_000,
          at: T + 1000,
        }),
      ).toEqual({ kind: "alert-delivery-marked", found: true });
      await one(store, {
        kind: "alert-delivery",
        id: c!.id,
        result: "failed",
        error: "HTTP 404",
        nextAt: null,
        at: T + 1000,
      });
      expect(
        await one(store, {
          kind: "alert-delivery",
          id: a!.id,
          result: "failed",
          error: "late",
          nextAt: null,
          at: T + 2000,
        }),
      ).toEqual({ kind: "alert-delivery-marked", found: false });
      expect(await store.alertDue(T + 59_999, 10)).toEqual([]);
      expect((await store.alertDue(T + 60_000, 10)).map((d) => [d.id, d.attempts, d.lastError])).toEqual([
        [b!.id, 1, "connection refused"],
      ]);
      expect(await store.alertQueue()).toEqual([{ channel: "b", pending: 1 }]);
      const [event] = await store.alertHistory({ limit: 1 });
      expect(event!.deliveries).toEqual([
        { channel: "a", state: "sent", attempts: 1, lastError: null, sentAt: T + 1000 },
        { channel: "b", state: "pending", attempts: 1, lastError: "connection refused", sentAt: null },
        { channel: "c", state: "failed", attempts: 1, lastError: "HTTP 404", sentAt: null },
      ]);
    });

    test("silences are set and lifted; rule marks keep them across rounds", async () => {
      const store = await freshStore();
      await one(store, { kind: "alert-silence", rule: "spike", until: T + DAY, at: T });
      await one(store, round(T + 60_000, [], [], [{ rule: "spike", summary: "ok" }]));
      expect(await store.alertRuleMarks()).toEqual([
        { rule: "spike", silencedUntil: T + DAY, evaluatedAt: T + 60_000, summary: "ok" },
      ]);
      await one(store, { kind: "alert-silence", rule: "spike", until: null, at: T + HOUR });
      expect(await store.alertRuleMarks()).toEqual([
        { rule: "spike", silencedUntil: null, evaluatedAt: T + 60_000, summary: "ok" },
      ]);
    });

    test("forget removes old history and finished messages, never an alert's current entry nor a queued message", async () => {
      const store = await freshStore();
      await one(store, round(T, [firing("old", "", ["hook"]), firing("kept", "", [])]));
      await one(store, round(T + HOUR, [resolved("old", "", [])]));
      await one(store, round(T + 2 * HOUR, [firing("queued", "", ["hook"])]));
      const due = await store.alertDue(T + 3 * HOUR, 10);
      await one(store, {
        kind: "alert-delivery",
        id: due[0]!.id,
        result: "sent",
        error: null,
        nextAt: null,
        at: T + 60_000,
      });
      const r = await one(store, { kind: "alert-forget", before: T + 3 * HOUR, at: T + 4 * HOUR });
      // "old" firing (its message sent) goes; "old" resolved and "kept" are current; "queued" still waits.
      expect(r).toEqual({ kind: "alert-forgotten", events: 1, messages: 1 });
      expect((await store.alertHistory({ limit: 10 })).map((e) => [e.rule, e.status])).toEqual([
        ["queued", "firing"],
        ["old", "resolved"],
        ["kept", "firing"],
      ]);
      expect(await store.alertQueue()).toEqual([{ channel: "hook", pending: 1 }]);
    });

    test("alert state survives close and reopen", async () => {
      const db = await database();
      const store = await db.open();
      await one(store, round(T, [firing("spike", "app=x", ["hook"])]));
      await one(store, { kind: "alert-silence", rule: "spike", until: T + DAY, at: T });
      const before = {
        states: await store.alertStates(),
        marks: await store.alertRuleMarks(),
        history: await store.alertHistory({ limit: 10 }),
        due: await store.alertDue(T, 10),
      };
      await store.close();
      const reopened = await db.open();
      expect({
        states: await reopened.alertStates(),
        marks: await reopened.alertRuleMarks(),
        history: await reopened.alertHistory({ limit: 10 }),
        due: await reopened.alertDue(T, 10),
      }).toEqual(before);
    });
  });
}
