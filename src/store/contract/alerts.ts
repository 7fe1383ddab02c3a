// The alerts feature of the Store contract (src/alerts/): state, history and the delivery queue.
import type { ReadTable } from "./reads.ts";

/** What the alert job and the alert actions write (src/alerts/): state, history and the delivery queue. */
export type AlertWrite =
  /**
   * One evaluation round, whole or not at all (a round cut short by a crash is evaluated again,
   * never half recorded): each rule's last evaluation, the changes of state with their history
   * entries and queued messages, and firings held back before (cooldown, silence) sent now.
   */
  | {
      kind: "alert-round";
      at: number;
      rules: readonly { rule: string; summary: string }[];
      transitions: readonly AlertTransition[];
      sends: readonly AlertSend[];
    }
  /** Silences a rule until `until` (null: the silence ends now). */
  | { kind: "alert-silence"; rule: string; until: number | null; at: number }
  /**
   * What came of one delivery attempt of a queued message: sent; failed and tried again at
   * `nextAt` ("retry"); failed for good ("failed"). Only a message still queued changes.
   */
  | {
      kind: "alert-delivery";
      id: number;
      result: "sent" | "retry" | "failed";
      error: string | null;
      nextAt: number | null;
      at: number;
    }
  /** History entries from before `before` go (not those an alert's current state points at), and delivered or failed messages queued before it. */
  | { kind: "alert-forget"; before: number; at: number };

export interface AlertResults {
  /** `events`: the ids of the history entries of the round's transitions, in order. */
  "alert-round": { kind: "alert-recorded"; events: number[] };
  "alert-silence": { kind: "alert-silenced" };
  /** `found`: the message was still queued (a message already marked stays as it is). */
  "alert-delivery": { kind: "alert-delivery-marked"; found: boolean };
  "alert-forget": { kind: "alert-forgotten"; events: number; messages: number };
}

/** Whether an alert's condition holds (firing) or not (ok). */
type AlertStatus = "firing" | "ok";
/** Why a change of state was recorded without a message: a cooldown since the last one, a silence, or a resolve of a firing never sent. */
type HeldBack = "cooldown" | "silenced" | "unsent";

/** An alert (a rule about one subject) began or stopped firing: a history entry, and its message queued for `channels`. */
export interface AlertTransition {
  rule: string;
  /** What the rule is about: "" for the rule as a whole, else e.g. "app=jellyfin" (src/alerts/). */
  subject: string;
  status: "firing" | "resolved";
  /** The message as sent and shown in the history (JSON, src/alerts/message.ts). */
  message: string;
  /** Where it goes now; empty when held back. */
  channels: readonly string[];
  heldBack: HeldBack | null;
}

/** A firing held back before (cooldown, silence) that is sent now, to `channels`, as `message`. */
export interface AlertSend {
  rule: string;
  subject: string;
  message: string;
  channels: readonly string[];
}

/** Where an alert stands. */
export interface AlertState {
  rule: string;
  subject: string;
  status: AlertStatus;
  /** When it began to stand so. */
  since: number;
  /** The history entry of that change. */
  eventId: number;
  /** Whether that change was sent (a firing held back is sent later, when it still fires). */
  notified: boolean;
  /** When a firing of it was last sent: the cooldown counts from here. */
  lastSentAt: number | null;
}

/** A rule's own marks: its silence and its last evaluation. */
export interface AlertRuleMark {
  rule: string;
  silencedUntil: number | null;
  evaluatedAt: number | null;
  /** What the last evaluation found, in a few words. */
  summary: string | null;
}

type DeliveryState = "pending" | "sent" | "failed";

/** One message queued for one channel. */
export interface AlertDelivery {
  id: number;
  eventId: number;
  channel: string;
  /** The message (JSON), as for AlertTransition. */
  message: string;
  createdAt: number;
  /** When the next attempt is due (pending). */
  nextAt: number;
  attempts: number;
  state: DeliveryState;
  lastError: string | null;
  sentAt: number | null;
}

/** One history entry: an alert that began or stopped firing, and what became of its messages. */
export interface AlertEvent {
  id: number;
  rule: string;
  subject: string;
  status: "firing" | "resolved";
  at: number;
  message: string;
  /** When its message was queued (at, or later for a firing held back); null when never. */
  notifiedAt: number | null;
  heldBack: HeldBack | null;
  deliveries: Pick<AlertDelivery, "channel" | "state" | "attempts" | "lastError" | "sentAt">[];
}

/** What alerts read: states, rule marks, history, and the delivery queue. */
export interface AlertReads {
  alertStates(): Promise<AlertState[]>;
  alertRuleMarks(): Promise<AlertRuleMark[]>;
  /** Newest first; `before`: an entry id to continue below; `rule`: only that rule's entries. */
  alertHistory(opts: { limit: number; before?: number; rule?: string }): Promise<AlertEvent[]>;
  /** Messages still queued whose attempt is due by `dueBy`, oldest first. */
  alertDue(dueBy: number, limit: number): Promise<AlertDelivery[]>;
  /** Messages still queued, per channel (channels with none left out). */
  alertQueue(): Promise<{ channel: string; pending: number }[]>;
}

export const ALERT_READS = {
  alertStates: "once",
  alertRuleMarks: "once",
  alertHistory: "once",
  alertDue: "once",
  alertQueue: "once",
} as const satisfies ReadTable<AlertReads>;
