// From what a rule finds to what is recorded and sent: pure, so every case is a table test.
//
// An alert fires when its condition begins to hold and resolves when it stops. A firing is sent
// once (no reminders); one that begins within `cooldown` of the last firing sent, or while the rule
// is silenced, is recorded but held back, and sent when the cooldown or silence ends if it still
// fires. A resolve is sent when its firing was sent (and send_resolved is on), unless silenced.
// An observation without enough data to judge leaves the alert as it is.
import type { AlertSend, AlertState, AlertTransition } from "../store/contract/alerts.ts";
import type { Observation } from "./evaluate.ts";
import { messageOf } from "./message.ts";
import type { Rule } from "./rules.ts";

export interface Decision {
  transitions: AlertTransition[];
  sends: AlertSend[];
}

export function decide(
  rule: Rule,
  observations: readonly Observation[],
  states: ReadonlyMap<string, AlertState>,
  silencedUntil: number | null,
  now: number,
  baseUrl: string,
): Decision {
  const transitions: AlertTransition[] = [];
  const sends: AlertSend[] = [];
  const silenced = silencedUntil !== null && silencedUntil > now;
  const sending = rule.sendTo.length > 0;
  for (const o of observations) {
    const state = states.get(o.subject);
    const wasFiring = state?.status === "firing";
    if (o.firing === null) continue;
    const cooling =
      state?.lastSentAt !== null && state?.lastSentAt !== undefined && now - state.lastSentAt < rule.cooldownMs;
    if (o.firing && !wasFiring) {
      const heldBack = !sending ? null : silenced ? "silenced" : cooling ? "cooldown" : null;
      const channels = sending && heldBack === null ? rule.sendTo : [];
      transitions.push({
        rule: rule.id,
        subject: o.subject,
        status: "firing",
        message: JSON.stringify(messageOf(rule, o, "firing", now, now, baseUrl)),
        channels,
        heldBack,
      });
    } else if (o.firing && wasFiring && !state!.notified && sending && !silenced && !cooling) {
      sends.push({
        rule: rule.id,
        subject: o.subject,
        message: JSON.stringify(messageOf(rule, o, "firing", now, state!.since, baseUrl)),
        channels: rule.sendTo,
      });
    } else if (!o.firing && wasFiring) {
      const heldBack =
        !sending || !rule.sendResolved ? null : !state!.notified ? "unsent" : silenced ? "silenced" : null;
      const channels = sending && rule.sendResolved && heldBack === null ? rule.sendTo : [];
      transitions.push({
        rule: rule.id,
        subject: o.subject,
        status: "resolved",
        message: JSON.stringify(messageOf(rule, o, "resolved", now, state!.since, baseUrl)),
        channels,
        heldBack,
      });
    }
  }
  return { transitions, sends };
}
