// The alerts file (every mistake one line naming the file, the line and the rule or channel), and
// the pure state machine that turns what rules find into what is recorded and sent.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { decide } from "../../src/alerts/decide.ts";
import type { Observation } from "../../src/alerts/evaluate.ts";
import { loadAlerts, parseAlerts, type Rule } from "../../src/alerts/rules.ts";
import { ConfigError } from "../../src/config.ts";
import { HOUR } from "../../src/domain/time.ts";
import type { AlertState } from "../../src/store/contract/alerts.ts";
import { tempDir } from "../helpers/tmp.ts";

const EXAMPLE_ENV = {
  NTFY_TOKEN: "tk",
  GOTIFY_APP_TOKEN: "g",
  DISCORD_WEBHOOK_URL: "https://discord.com/api/webhooks/1/x",
  SLACK_WEBHOOK_URL: "https://hooks.slack.com/services/x",
  HOOK_TOKEN: "h",
  SMTP_PASSWORD: "p",
};
const MANUAL = await Bun.file(new URL("../../docs/alerts.md", import.meta.url)).text();
const EXAMPLE = await Bun.file(new URL("../../docs/alerts.example.toml", import.meta.url)).text();

const error = (text: string, env: Record<string, string> = {}): string => {
  try {
    parseAlerts("/etc/installstats/alerts.toml", text, env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("parsed without error");
};

const HOOK = `[channel.hook]\ntype = "webhook"\nurl = "http://127.0.0.1:1/hook"\n`;

describe("the alerts file", () => {
  test("the manual's complete example (docs/alerts.md) is the example file, and it parses: every rule kind and channel kind", () => {
    const block = /## The file: a complete example[\s\S]*?```toml\n([\s\S]*?)```/.exec(MANUAL)?.[1];
    expect(block).toBe(EXAMPLE);
    const config = parseAlerts("alerts.toml", EXAMPLE, EXAMPLE_ENV);
    expect(new Set(config.rules.map((r) => r.type))).toEqual(
      new Set(["failure_rate", "new_error", "no_reports", "rejected"]),
    );
    expect(new Set(config.channels.map((c) => c.type))).toEqual(
      new Set(["webhook", "ntfy", "gotify", "discord", "slack", "email"]),
    );
    const jump = config.rules.find((r) => r.id === "failure-jump")!;
    expect(jump).toMatchObject({
      type: "failure_rate",
      scope: { each: true },
      windowMs: 6 * HOUR,
      minRuns: 20,
      above: null,
      baseline: { windows: 7, factor: 2, minIncrease: 0.05 },
      sendTo: ["phone", "mail"],
      cooldownMs: 3 * HOUR,
    });
    // Defaults from the top of the file.
    expect(config.rules.find((r) => r.id === "docker-failures")).toMatchObject({
      sendTo: ["phone"],
      cooldownMs: HOUR,
      kind: "all",
      repoSource: "ProxmoxVE",
      scope: { app: "docker" },
    });
    expect(config.channels.find((c) => c.name === "phone")).toMatchObject({ type: "ntfy", token: "tk" });
  });

  test.each([
    [
      "TOML that does not parse",
      `${HOOK}\n[[rule]]\nid = "x"\ntype = "failure_rate"\nwindow = 6h\n`,
      "/etc/installstats/alerts.toml, line 8: not valid TOML: Unexpected character after a value: 'h'",
    ],
    [
      "a window that is not whole hours",
      `${HOOK}\n[[rule]]\nid = "spike"\ntype = "failure_rate"\nwindow = "90m"\nabove = 0.2\nsend_to = ["hook"]\n`,
      'line 8 (rule spike): window must be a duration such as 6h, 24h or 7d (whole hours: rules read hourly rollups), got "90m"',
    ],
    [
      "a misspelt key",
      `${HOOK}\n[[rule]]\nid = "spike"\ntype = "failure_rate"\nwindow = "6h"\nabove = 0.2\nsend_to = ["hook"]\nmin_run = 5\n`,
      "line 11 (rule spike): unknown key min_run in a failure_rate rule; it takes above, app, baseline_windows, cooldown, factor, id, kind, min_increase, min_runs, repo_source, send_resolved, send_to, type, window",
    ],
    [
      "a channel not defined",
      `${HOOK}\n[[rule]]\nid = "spike"\ntype = "no_reports"\nfor = "6h"\nsend_to = ["hok"]\n`,
      'line 9 (rule spike): send_to names channel "hok", which is not defined (channels: hook)',
    ],
    [
      "no channel at all",
      `[[rule]]\nid = "spike"\ntype = "no_reports"\nfor = "6h"\n`,
      'line 1 (rule spike): rule spike names no channel: add send_to = ["<channel>"], or send_to = [] to keep it to the dashboard',
    ],
    [
      "no threshold",
      `${HOOK}\n[[rule]]\nid = "spike"\ntype = "failure_rate"\nwindow = "6h"\nsend_to = ["hook"]\n`,
      "line 5 (rule spike): rule spike has no threshold: add above = 0.2",
    ],
    [
      "a rate over 1",
      `${HOOK}\n[[rule]]\nid = "spike"\ntype = "failure_rate"\nwindow = "6h"\nabove = 20\nsend_to = ["hook"]\n`,
      "line 9 (rule spike): above must be a number from 0 to 1, got 20",
    ],
    [
      "two rules with one id",
      `${HOOK}\n[[rule]]\nid = "a"\ntype = "no_reports"\nfor = "1h"\nsend_to = []\n\n[[rule]]\nid = "a"\ntype = "no_reports"\nfor = "2h"\nsend_to = []\n`,
      "line 12 (rule a): a second rule with id a",
    ],
    [
      "an unknown rule type",
      `${HOOK}\n[[rule]]\nid = "a"\ntype = "failure"\n`,
      'line 7 (rule a): type must be one of failure_rate, new_error, no_reports, rejected, got "failure"',
    ],
    [
      "a channel without its token",
      `[channel.g]\ntype = "gotify"\nurl = "http://gotify.lan"\n`,
      'line 1 (channel g): token is required, e.g. token = "${GOTIFY_TOKEN}" (an application token)',
    ],
    [
      "a secret from an unset variable",
      `[channel.n]\ntype = "ntfy"\nurl = "https://ntfy.sh/x"\ntoken = "\${NTFY_TOKEN}"\n`,
      "line 4 (channel n): token names the environment variable NTFY_TOKEN, which is not set",
    ],
    [
      "a webhook URL that is not one",
      `[channel.d]\ntype = "discord"\nurl = "discord.com/api/webhooks/1/secret"\n`,
      "line 3 (channel d): url is not a URL (http:// or https://)",
    ],
    [
      "a password sent in the clear",
      `[channel.m]\ntype = "email"\nhost = "mail.lan"\nsecurity = "none"\nusername = "u"\npassword = "p"\nfrom = "a@b.c"\nto = ["d@e.f"]\n`,
      'line 5 (channel m): security = "none" would send the password unencrypted',
    ],
    [
      "a reason that does not exist",
      `${HOOK}\n[[rule]]\nid = "r"\ntype = "rejected"\nwindow = "1h"\nreasons = ["bad_json"]\nsend_to = []\n`,
      'line 9 (rule r): reasons holds "bad_json"; reasons are invalid_json, invalid_field, already_final, repaired, payload_too_large, unknown_path',
    ],
    [
      "an unknown top-level key",
      `evaluate_evry = "1m"\n`,
      "alerts file /etc/installstats/alerts.toml, line 1: unknown key evaluate_evry in the top level of the file",
    ],
  ])("%s: one line naming the file, the line and the rule", (_, text, expected) => {
    const message = error(text);
    expect(message).toStartWith("alerts file /etc/installstats/alerts.toml");
    expect(message).toContain(expected);
    expect(message).not.toContain("\n");
  });

  test("a secret never appears in a message about its value", () => {
    expect(error(`[channel.d]\ntype = "discord"\nurl = "discord.com/api/webhooks/1/s3cr3t-token"\n`)).not.toContain(
      "s3cr3t",
    );
  });

  test("a missing, unreadable or directory file is one line too", async () => {
    const dir = tempDir();
    await expect(loadAlerts(join(dir, "nope.toml"), {})).rejects.toThrow(
      `alerts file ${join(dir, "nope.toml")} does not exist; check --alerts (or INSTALLSTATS_ALERTS)`,
    );
    await expect(loadAlerts(dir, {})).rejects.toThrow("is a directory");
    writeFileSync(
      join(dir, "ok.toml"),
      `${HOOK}[[rule]]\nid = "q"\ntype = "no_reports"\nfor = "6h"\nsend_to = ["hook"]\n`,
    );
    expect((await loadAlerts(join(dir, "ok.toml"), {})).rules).toHaveLength(1);
  });
});

// ---------------------------------------------------------------- the state machine

const NOW = Date.parse("2026-06-01T12:00:00Z");
const rule = (over: Partial<Rule> = {}): Rule =>
  ({
    id: "r",
    type: "no_reports",
    forMs: HOUR,
    sendTo: ["c"],
    cooldownMs: 2 * HOUR,
    sendResolved: true,
    ...over,
  }) as Rule;
const obs = (firing: boolean | null, subject = ""): Observation => ({
  subject,
  labels: {},
  firing,
  values: { silentMs: 2 * HOUR, forMs: HOUR, lastReportAt: NOW - 2 * HOUR },
  window: null,
});
const state = (over: Partial<AlertState>): AlertState => ({
  rule: "r",
  subject: "",
  status: "ok",
  since: NOW - 5 * HOUR,
  eventId: 1,
  notified: true,
  lastSentAt: null,
  ...over,
});
const run = (r: Rule, o: Observation, s: AlertState | null, silencedUntil: number | null = null) => {
  const d = decide(r, [o], new Map(s ? [[s.subject, s]] : []), silencedUntil, NOW, "http://x");
  return {
    transitions: d.transitions.map((t) => [t.status, t.channels.join(","), t.heldBack]),
    sends: d.sends.map((x) => x.channels.join(",")),
  };
};

describe("decide", () => {
  test.each([
    ["starts firing: sent", rule(), obs(true), null, null, [["firing", "c", null]], []],
    [
      "still firing, sent: nothing",
      rule(),
      obs(true),
      state({ status: "firing", lastSentAt: NOW - HOUR }),
      null,
      [],
      [],
    ],
    [
      "fires again within the cooldown: held back",
      rule(),
      obs(true),
      state({ lastSentAt: NOW - HOUR }),
      null,
      [["firing", "", "cooldown"]],
      [],
    ],
    [
      "fires again after the cooldown: sent",
      rule(),
      obs(true),
      state({ lastSentAt: NOW - 3 * HOUR }),
      null,
      [["firing", "c", null]],
      [],
    ],
    [
      "held back and the cooldown is over: sent late",
      rule(),
      obs(true),
      state({ status: "firing", notified: false, lastSentAt: NOW - 3 * HOUR }),
      null,
      [],
      ["c"],
    ],
    [
      "held back, cooldown still on: nothing",
      rule(),
      obs(true),
      state({ status: "firing", notified: false, lastSentAt: NOW - HOUR }),
      null,
      [],
      [],
    ],
    ["fires while silenced: held back", rule(), obs(true), null, NOW + HOUR, [["firing", "", "silenced"]], []],
    ["a silence over is no silence", rule(), obs(true), null, NOW - 1, [["firing", "c", null]], []],
    [
      "resolves: sent",
      rule(),
      obs(false),
      state({ status: "firing", lastSentAt: NOW - HOUR }),
      null,
      [["resolved", "c", null]],
      [],
    ],
    [
      "resolves within its cooldown: still sent",
      rule(),
      obs(false),
      state({ status: "firing", lastSentAt: NOW - 60_000 }),
      null,
      [["resolved", "c", null]],
      [],
    ],
    [
      "resolves, its firing never sent: not sent",
      rule(),
      obs(false),
      state({ status: "firing", notified: false }),
      null,
      [["resolved", "", "unsent"]],
      [],
    ],
    [
      "resolves while silenced: not sent",
      rule(),
      obs(false),
      state({ status: "firing" }),
      NOW + HOUR,
      [["resolved", "", "silenced"]],
      [],
    ],
    [
      "resolves, send_resolved off: recorded only",
      rule({ sendResolved: false }),
      obs(false),
      state({ status: "firing" }),
      null,
      [["resolved", "", null]],
      [],
    ],
    ["too little data: nothing changes", rule(), obs(null), state({ status: "firing" }), null, [], []],
    ["not firing and was not: nothing", rule(), obs(false), state({}), null, [], []],
    [
      "a dashboard-only rule: recorded, nothing held back",
      rule({ sendTo: [] }),
      obs(true),
      null,
      NOW + HOUR,
      [["firing", "", null]],
      [],
    ],
  ] as const)("%s", (_, r, o, s, silence, transitions, sends) => {
    expect(run(r, o, s, silence)).toEqual({ transitions: transitions.map((t) => [...t]), sends: [...sends] });
  });
});
