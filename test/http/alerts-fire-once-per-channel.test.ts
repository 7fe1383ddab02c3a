// Alerts end to end in-process: rules over generated data (a manual clock: no sleeping for hours),
// every channel against real receivers on loopback (an HTTP server checking each service's request
// shape, an SMTP server with STARTTLS and AUTH), cooldowns, silences, resolves, retries.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { parseAlerts } from "../../src/alerts/rules.ts";
import type { AlertMessage } from "../../src/alerts/message.ts";
import { failureSignatureId } from "../../src/domain/error-signature.ts";
import { HOUR, DAY } from "../../src/domain/time.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { parseMail, startHttpReceiver, startSmtpSink } from "../helpers/alert-receivers.ts";
import { testApp, startReport, type TestApp } from "../helpers/app.ts";
import { finishedLoad } from "../helpers/reports.ts";

const ADMIN = "admin-token-for-alerts";
const SECRETS = {
  NTFY_TOKEN: "tk_ntfysecret123",
  GOTIFY_TOKEN: "Agotifysecret456",
  SMTP_PASSWORD: "smtp-pass-789",
  HOOK_TOKEN: "hook-secret-000",
  DISCORD_TOKEN: "discordsecretABC",
};

let http: ReturnType<typeof startHttpReceiver>;
let smtp: ReturnType<typeof startSmtpSink>;
let smtpPort: number;
beforeAll(async () => {
  http = startHttpReceiver({
    ntfyToken: SECRETS.NTFY_TOKEN,
    gotifyToken: SECRETS.GOTIFY_TOKEN,
    hookToken: SECRETS.HOOK_TOKEN,
  });
  smtp = startSmtpSink({ users: { "alerts@example.org": SECRETS.SMTP_PASSWORD } });
  smtpPort = await smtp.ready;
});
afterAll(async () => {
  http.stop();
  await smtp.stop();
});

/** Every channel kind, pointing at the receivers. */
function channels(extra = ""): string {
  return `
[channel.hook]
type = "webhook"
url = "${http.url}/hook"
headers = { Authorization = "Bearer \${HOOK_TOKEN}" }

[channel.ntfy]
type = "ntfy"
url = "${http.url}/ntfy/installstats-alerts"
token = "\${NTFY_TOKEN}"

[channel.gotify]
type = "gotify"
url = "${http.url}/gotify"
token = "\${GOTIFY_TOKEN}"

[channel.discord]
type = "discord"
url = "${http.url}/discord/123456/\${DISCORD_TOKEN}"
username = "installstats"

[channel.slack]
type = "slack"
url = "${http.url}/slack/T000-B000"

[channel.mail]
type = "email"
host = "127.0.0.1"
port = ${smtpPort}
security = "starttls"
username = "alerts@example.org"
password = "\${SMTP_PASSWORD}"
from = "installstats <alerts@example.org>"
to = ["ops@example.org", "oncall@example.org"]
ca_file = "${smtp.certFile}"
${extra}`;
}
const ALL = `["hook", "ntfy", "gotify", "discord", "slack", "mail"]`;

/** A rule over all apps: more than 20% of at least 10 finished runs failed in the last hour. */
const spike = (sendTo: string[]) => `
[[rule]]
id = "spike"
type = "failure_rate"
window = "1h"
min_runs = 10
above = 0.2
send_to = ${JSON.stringify(sendTo)}
`;

async function appWith(rules: string, extraChannels = ""): Promise<TestApp> {
  const alerts = parseAlerts("alerts.toml", `${channels(extraChannels)}\n${rules}`, SECRETS);
  return testApp({ adminToken: ADMIN, publicUrl: "https://stats.example.org" }, { alerts });
}

let seq = 0;
/** `n` finished runs of `app` created at `at` (a minute apart), `failed` of them failed with `error`. */
function runs(
  app: string,
  at: number,
  n: number,
  failed: number,
  error = "exit code 1: apt-get install failed",
  fields: Partial<Execution> = {},
) {
  return Array.from({ length: n }, (_, i) => {
    const createdAt = at + i * 1000;
    const fail = i < failed;
    const id = `${app}-${++seq}`;
    return finishedLoad(id, createdAt, {
      nsapp: app,
      status: fail ? "failed" : "done",
      outcome: fail ? "failed" : "success",
      error: fail ? error : null,
      ...fields,
    });
  });
}
const load = async (a: TestApp, ops: ReturnType<typeof runs>) => void (await a.store.write(ops));

/** What the receivers took since `from` (an index into each list). */
const marks = () => ({ http: http.received.length, mail: smtp.mails.length });
const since = (m: { http: number; mail: number }) => ({
  http: http.received.slice(m.http),
  mail: smtp.mails.slice(m.mail),
});

/** One evaluation round and one delivery round, as the jobs run them. */
async function round(a: TestApp) {
  const evaluated = await a.alerts!.evaluate();
  const delivered = await a.alerts!.deliver();
  return { evaluated, delivered };
}

const admin = { authorization: `Bearer ${ADMIN}` };

describe("alerts: a failure spike on every channel", () => {
  test("fires once per channel with the numbers and a link, nothing more while it fires, a resolve, a cooldown, then a late send", async () => {
    const a = await appWith(`
[[rule]]
id = "jellyfin-failures"
type = "failure_rate"
app = "jellyfin"
window = "1h"
min_runs = 10
above = 0.3
cooldown = "3h"
send_to = ${ALL}
`);
    const t0 = a.clock();
    // Quiet before: 20 runs, 1 failed.
    await load(a, runs("jellyfin", t0 - 3 * HOUR, 20, 1));
    let m = marks();
    expect((await round(a)).evaluated).toMatchObject({ fired: 0, resolved: 0 });
    expect(since(m)).toEqual({ http: [], mail: [] });

    // The spike: 24 runs in this hour, 12 failed.
    await load(a, runs("jellyfin", t0 - 30 * 60_000, 24, 12));
    a.clock.advance(60_000);
    m = marks();
    const r = await round(a);
    expect(r.evaluated).toMatchObject({ fired: 1 });
    expect(r.delivered).toMatchObject({ sent: 6, retry: 0, failed: 0 });
    const got = since(m);
    expect(http.refused).toEqual([]);
    expect(got.http.map((x) => x.kind).sort()).toEqual(["discord", "gotify", "ntfy", "slack", "webhook"]);
    expect(got.mail).toHaveLength(1);

    const link = "https://stats.example.org/app?days=1&nsapp=jellyfin";
    const hook = got.http.find((x) => x.kind === "webhook")!;
    expect(hook.headers.authorization).toBe(`Bearer ${SECRETS.HOOK_TOKEN}`);
    const msg = hook.body as unknown as AlertMessage;
    expect(msg).toMatchObject({
      status: "firing",
      rule: "jellyfin-failures",
      rule_type: "failure_rate",
      labels: { app: "jellyfin" },
      link,
    });
    expect(msg.values).toMatchObject({ rate: 0.5, failed: 12, runs: 24, threshold: 0.3 });
    expect(msg.title).toBe("FIRING jellyfin-failures: jellyfin failure rate 50.0% (12 of 24 runs, last 1h)");
    expect(msg.text).toContain("Threshold: above 30.0%");
    expect(msg.text).toContain(`Dashboard: ${link}`);

    const ntfy = got.http.find((x) => x.kind === "ntfy")!;
    expect(ntfy.path).toBe("/ntfy");
    expect(ntfy.headers.authorization).toBe(`Bearer ${SECRETS.NTFY_TOKEN}`);
    expect(ntfy.body).toMatchObject({
      topic: "installstats-alerts",
      title: msg.title,
      message: msg.text,
      priority: 4,
      click: link,
      tags: ["rotating_light"],
    });

    const gotify = got.http.find((x) => x.kind === "gotify")!;
    expect(gotify.headers["x-gotify-key"]).toBe(SECRETS.GOTIFY_TOKEN);
    expect(gotify.body).toMatchObject({
      title: msg.title,
      message: msg.text,
      priority: 8,
      extras: { "client::notification": { click: { url: link } } },
    });

    const discord = got.http.find((x) => x.kind === "discord")!;
    expect(discord.path).toBe(`/discord/123456/${SECRETS.DISCORD_TOKEN}`);
    expect(discord.body).toMatchObject({
      username: "installstats",
      allowed_mentions: { parse: [] },
      embeds: [{ title: msg.title, description: msg.text, url: link, color: 0xd64541, timestamp: msg.at }],
    });

    const slack = got.http.find((x) => x.kind === "slack")!;
    expect(slack.body.text).toBe(
      `*${msg.title}*\n${msg.text
        .split("\n")
        .filter((l) => !l.startsWith("Dashboard:"))
        .join("\n")}\n<${link}|Open in the dashboard>`,
    );

    const mail = got.mail[0]!;
    expect(mail).toMatchObject({
      from: "alerts@example.org",
      to: ["ops@example.org", "oncall@example.org"],
      tls: true,
      user: "alerts@example.org",
      mechanism: "PLAIN",
    });
    const parsed = parseMail(mail.data);
    expect(parsed.headers.subject).toBe(msg.title);
    expect(parsed.headers.from).toBe("installstats <alerts@example.org>");
    expect(parsed.text).toBe(msg.text);

    // Still firing a minute and an hour later: nothing more.
    m = marks();
    a.clock.advance(60_000);
    expect((await round(a)).evaluated).toMatchObject({ fired: 0, resolved: 0, sent_late: 0 });
    expect(since(m)).toEqual({ http: [], mail: [] });

    // The next hour is calm: resolved, sent to every channel.
    a.clock.advance(HOUR);
    await load(a, runs("jellyfin", a.clock() - 20 * 60_000, 20, 0));
    a.clock.advance(HOUR - 30 * 60_000);
    m = marks();
    const resolved = await round(a);
    expect(resolved.evaluated).toMatchObject({ resolved: 1 });
    expect(resolved.delivered).toMatchObject({ sent: 6 });
    const back = since(m);
    expect(back.http.find((x) => x.kind === "webhook")!.body as unknown as AlertMessage).toMatchObject({
      status: "resolved",
      values: { rate: 0, runs: 20 },
    });
    expect(back.http.find((x) => x.kind === "ntfy")!.body).toMatchObject({ priority: 3, tags: ["white_check_mark"] });
    expect(parseMail(back.mail[0]!.data).headers.subject).toStartWith(
      "RESOLVED jellyfin-failures: jellyfin failure rate 0.0%",
    );

    // It fires again within the cooldown (3h from the first message): recorded, not sent.
    await load(a, runs("jellyfin", a.clock() + 60_000, 20, 15));
    a.clock.advance(2 * 60_000);
    m = marks();
    expect((await round(a)).evaluated).toMatchObject({ fired: 1 });
    expect(since(m)).toEqual({ http: [], mail: [] });
    const history = (await a.get("/api/alerts/history")).body.events as {
      status: string;
      held_back: string | null;
      notified_at: string | null;
      deliveries: unknown[];
    }[];
    expect(history.map((e) => [e.status, e.held_back, e.deliveries.length])).toEqual([
      ["firing", "cooldown", 0],
      ["resolved", null, 6],
      ["firing", null, 6],
    ]);

    // The cooldown ends while it still fires: sent once, saying since when.
    a.clock.advance(HOUR - 5 * 60_000);
    await load(a, runs("jellyfin", a.clock() - 60_000, 20, 15));
    expect((await round(a)).evaluated).toMatchObject({ sent_late: 0 });
    a.clock.advance(HOUR);
    await load(a, runs("jellyfin", a.clock() - 60_000, 20, 15));
    m = marks();
    const late = await round(a);
    expect(late.evaluated).toMatchObject({ fired: 0, sent_late: 1 });
    expect(late.delivered).toMatchObject({ sent: 6 });
    const lateHook = since(m).http.find((x) => x.kind === "webhook")!.body as unknown as AlertMessage;
    expect(lateHook.status).toBe("firing");
    expect(lateHook.text).toContain("held back until now");
    m = marks();
    a.clock.advance(60_000);
    await round(a);
    expect(since(m)).toEqual({ http: [], mail: [] });

    // The listing says where it stands.
    const listing = (await a.get("/api/alerts")).body as {
      enabled: boolean;
      rules: {
        id: string;
        status: string;
        firing: { labels: Record<string, string>; notified: boolean; title: string }[];
        summary: string;
      }[];
    };
    expect(listing.enabled).toBe(true);
    expect(listing.rules[0]).toMatchObject({
      id: "jellyfin-failures",
      status: "firing",
      firing: [{ labels: { app: "jellyfin" }, notified: true }],
    });
    expect(listing.rules[0]!.summary).toBe("75.0% of 40 runs");
  });
});

describe("alerts: rules over generated data", () => {
  test("a baseline rule over each app fires for the app whose rate doubled, not for one as bad as always", async () => {
    const a = await appWith(`
[[rule]]
id = "jump"
type = "failure_rate"
app = "*"
window = "2h"
min_runs = 20
baseline_windows = 3
factor = 2
min_increase = 0.05
send_to = ["hook"]
`);
    const t = a.clock();
    // Six hours before the window: "steady" fails 40% as always, "jumpy" 10%.
    for (let h = 2; h < 8; h++) {
      await load(a, runs("steady", t - h * HOUR - 30 * 60_000, 10, 4));
      await load(a, runs("jumpy", t - h * HOUR - 30 * 60_000, 10, 1));
    }
    // The window: "steady" still 40%, "jumpy" 45%; "rare" fails always but has 5 runs.
    await load(a, runs("steady", t - 90 * 60_000, 30, 12));
    await load(a, runs("jumpy", t - 90 * 60_000, 40, 18));
    await load(a, runs("rare", t - 90 * 60_000, 5, 5));
    const m = marks();
    expect((await round(a)).evaluated).toMatchObject({ fired: 1 });
    const [hit] = since(m).http;
    const msg = hit!.body as unknown as AlertMessage;
    expect(msg.labels).toEqual({ app: "jumpy" });
    expect(msg.values).toMatchObject({
      rate: 0.45,
      runs: 40,
      baseline: { rate: 0.1, runs: 60, windows: 3, factor: 2 },
    });
    expect(msg.text).toContain("Baseline: 10.0% over the previous 3 windows (60 runs)");
  });

  test("a new error signature and a new exit code fire for their app only; resolved when they stop", async () => {
    const a = await appWith(`
[[rule]]
id = "new-sig"
type = "new_error"
app = "*"
window = "6h"
lookback = "7d"
send_to = ["hook"]

[[rule]]
id = "new-exit"
type = "new_error"
app = "*"
on = "exit_code"
window = "6h"
lookback = "7d"
send_to = ["hook"]
`);
    const t = a.clock();
    const old = "exit code 100: apt-get install failed at line 42";
    const fresh = "exit code 7: curl: (7) Failed to connect to github.com port 443";
    // Days before: both apps fail with the old error, exit code 100.
    for (const app of ["nginx", "docker"]) await load(a, runs(app, t - 3 * DAY, 10, 3, old, { exitCode: 100 }));
    // The window: nginx fails with the old error and a new one (exit 7); docker with the new one too, but it saw it before.
    await load(a, runs("nginx", t - 2 * HOUR, 10, 3, old, { exitCode: 100 }));
    await load(a, runs("nginx", t - HOUR, 4, 2, fresh, { exitCode: 7 }));
    await load(a, runs("docker", t - 5 * DAY, 3, 2, fresh, { exitCode: 7 }));
    await load(a, runs("docker", t - HOUR, 3, 2, fresh, { exitCode: 7 }));
    const m = marks();
    expect((await round(a)).evaluated).toMatchObject({ fired: 2 });
    const msgs = since(m)
      .http.map((x) => x.body as unknown as AlertMessage)
      .sort((x, y) => x.rule.localeCompare(y.rule));
    const sig = failureSignatureId("failed", fresh)!;
    expect(msgs.map((x) => [x.rule, x.labels])).toEqual([
      ["new-exit", { app: "nginx", exit_code: "7" }],
      ["new-sig", { app: "nginx", signature: sig }],
    ]);
    expect(msgs[1]!.values).toMatchObject({ count: 2, lookbackMs: 7 * DAY });
    expect(msgs[1]!.link).toBe(`https://stats.example.org/installs?nsapp=nginx&outcome=failed&days=1&signature=${sig}`);
    expect(msgs[0]!.link).toBe("https://stats.example.org/installs?nsapp=nginx&outcome=failed&exit_code=7&days=1");
    expect(msgs[1]!.title).toContain("new error in nginx:");

    // Seven hours on, the new error has not come back: both resolve, "not seen" in the window.
    a.clock.advance(7 * HOUR);
    const m2 = marks();
    expect((await round(a)).evaluated).toMatchObject({ resolved: 2 });
    const resolved = since(m2).http.map((x) => x.body as unknown as AlertMessage);
    expect(resolved.map((x) => [x.status, x.values.noLongerNew])).toEqual([
      ["resolved", "gone"],
      ["resolved", "gone"],
    ]);
  });

  test("no reports for N hours fires, and resolves when one arrives", async () => {
    const a = await appWith(`
[[rule]]
id = "silent"
type = "no_reports"
for = "6h"
send_to = ["hook"]
`);
    // No report ever: nothing to judge yet.
    expect((await round(a)).evaluated).toMatchObject({ fired: 0 });
    expect((await a.post("/upload", startReport("nr-1"))).status).toBe(201);
    a.clock.advance(5 * HOUR);
    expect((await round(a)).evaluated).toMatchObject({ fired: 0 });
    a.clock.advance(HOUR + 60_000);
    let m = marks();
    expect((await round(a)).evaluated).toMatchObject({ fired: 1 });
    const msg = since(m).http[0]!.body as unknown as AlertMessage;
    expect(msg.title).toStartWith("FIRING silent: no reports for 6h 1m (last at ");
    expect(msg.values).toMatchObject({ silentMs: 6 * HOUR + 60_000, forMs: 6 * HOUR });
    expect((await a.post("/upload", startReport("nr-2"))).status).toBe(201);
    m = marks();
    expect((await round(a)).evaluated).toMatchObject({ resolved: 1 });
    expect((since(m).http[0]!.body as unknown as AlertMessage).title).toStartWith(
      "RESOLVED silent: reports arrive again",
    );
  });

  test("rejected reports above a rate fire; repaired ones count in their own rule", async () => {
    const a = await appWith(`
[[rule]]
id = "junk"
type = "rejected"
window = "1h"
above = 0.5
min_count = 5
send_to = ["hook"]

[[rule]]
id = "fixed"
type = "rejected"
reasons = ["repaired"]
window = "1h"
above = 0.1
min_count = 1
send_to = ["hook"]
`);
    for (let i = 0; i < 4; i++) expect((await a.post("/upload", startReport(`ok-${i}`))).status).toBe(201);
    for (let i = 0; i < 4; i++) expect((await a.post("/upload", "not json at all {")).status).toBe(400);
    expect((await round(a)).evaluated).toMatchObject({ fired: 0 }); // 4 < min_count
    expect((await a.post("/upload", { ...startReport("bad"), type: "spaceship" })).status).toBe(422);
    const m = marks();
    expect((await round(a)).evaluated).toMatchObject({ fired: 1 });
    const msg = since(m).http[0]!.body as unknown as AlertMessage;
    expect(msg.values).toMatchObject({
      rejected: 5,
      started: 4,
      rate: 1.25,
      byReason: { invalid_json: 4, invalid_field: 1 },
    });
    expect(msg.link).toBe("https://stats.example.org/admin");
    // A body the lenient parser repairs (an empty number, as bash interpolation leaves it): applied, and counted by "fixed".
    const repaired = JSON.stringify(startReport("repaired-1")).replace('"disk_size":8', '"disk_size": ');
    expect((await a.post("/upload", repaired)).status).toBe(201);
    const m2 = marks();
    expect((await round(a)).evaluated).toMatchObject({ fired: 1 });
    const fixed = since(m2).http[0]!.body as unknown as AlertMessage;
    expect(fixed).toMatchObject({
      rule: "fixed",
      values: { rejected: 1, started: 5, byReason: { repaired: 1 } },
      link: "https://stats.example.org/admin?reason=repaired",
    });
  });
});

describe("alerts: silences, the admin API, secrets", () => {
  test("a silenced rule records and sends nothing; lifted, the firing is sent; only with the admin token", async () => {
    const a = await appWith(spike(["hook"]));
    expect((await a.call("POST", "/api/admin/alerts/silence/spike?for=2h")).status).toBe(401);
    expect(
      (await a.call("POST", "/api/admin/alerts/silence/spike?for=2h", { authorization: "Bearer wrong" })).status,
    ).toBe(401);
    const bad = await a.call("POST", "/api/admin/alerts/silence/spike?for=soon", admin);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: "invalid_field", field: "for" });
    expect((await a.call("POST", "/api/admin/alerts/silence/nope?for=2h", admin)).body).toMatchObject({
      error: "not_found",
      message: expect.stringContaining("rules: spike"),
    });
    const silenced = await a.call("POST", "/api/admin/alerts/silence/spike?for=2h", admin);
    expect(silenced.status).toBe(200);
    expect(silenced.body).toEqual({ rule: "spike", silenced_until: new Date(a.clock() + 2 * HOUR).toISOString() });

    await load(a, runs("app1", a.clock() - 10 * 60_000, 20, 10));
    let m = marks();
    expect((await round(a)).evaluated).toMatchObject({ fired: 1 });
    expect(since(m).http).toEqual([]);
    const listing = (await a.get("/api/alerts")).body as {
      rules: { status: string; silenced_until: string | null; firing: { notified: boolean }[] }[];
    };
    expect(listing.rules[0]).toMatchObject({
      status: "firing",
      silenced_until: silenced.body.silenced_until,
      firing: [{ notified: false }],
    });
    expect(((await a.get("/api/alerts/history")).body.events as { held_back: string }[])[0]!.held_back).toBe(
      "silenced",
    );

    expect((await a.call("DELETE", "/api/admin/alerts/silence/spike")).status).toBe(401);
    expect((await a.call("DELETE", "/api/admin/alerts/silence/spike", admin)).body).toEqual({
      rule: "spike",
      silenced_until: null,
    });
    m = marks();
    a.clock.advance(60_000);
    expect((await round(a)).evaluated).toMatchObject({ sent_late: 1 });
    expect(since(m).http.map((x) => (x.body as unknown as AlertMessage).status)).toEqual(["firing"]);
  });

  test("test sends reach each channel; a failure says why without its secrets; secrets never in the API, /metrics or the log", async () => {
    const a = await appWith(
      `
[[rule]]
id = "quiet"
type = "no_reports"
for = "6h"
send_to = ["hook"]
`,
      `
[channel.broken]
type = "ntfy"
url = "http://127.0.0.1:9/\${NTFY_TOKEN}"
token = "\${NTFY_TOKEN}"
timeout = "2s"
`,
    );
    for (const name of ["hook", "ntfy", "gotify", "discord", "slack", "mail"]) {
      const m = marks();
      const r = await a.call("POST", `/api/admin/alerts/test/${name}`, admin);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ channel: name, ok: true, error: null });
      const got = since(m);
      if (name === "mail")
        expect(parseMail(got.mail[0]!.data).headers.subject).toBe("TEST installstats: channel mail works");
      else expect(got.http).toHaveLength(1);
    }
    expect(http.refused).toEqual([]);
    expect((await a.call("POST", "/api/admin/alerts/test/hook")).status).toBe(401);
    expect((await a.call("POST", "/api/admin/alerts/test/nope", admin)).status).toBe(404);
    const broken = await a.call("POST", "/api/admin/alerts/test/broken", admin);
    expect(broken.body).toMatchObject({ channel: "broken", ok: false });
    expect(String(broken.body.error)).not.toBe("");

    const everything = [
      JSON.stringify((await a.get("/api/alerts")).body),
      JSON.stringify(broken.body),
      JSON.stringify((await a.get("/healthz")).body),
      JSON.stringify((await a.get("/api/alerts/history")).body),
      await (await a.app.handle(new Request("http://localhost/metrics"))).text(),
      a.logLines.join("\n"),
    ].join("\n");
    for (const secret of Object.values(SECRETS)) expect(everything).not.toContain(secret);
    expect(everything).not.toContain("T000-B000");
    expect(everything).toContain(`"target":"${http.url.replace("http://", "http://")}/***"`);
  });

  test("a wrong SMTP password fails the test send with the server's answer, never the password", async () => {
    const a = await appWith(
      "",
      `
[channel.badmail]
type = "email"
host = "127.0.0.1"
port = ${smtpPort}
username = "alerts@example.org"
password = "not-the-password"
from = "alerts@example.org"
to = ["ops@example.org"]
ca_file = "${smtp.certFile}"
`,
    );
    const r = await a.call("POST", "/api/admin/alerts/test/badmail", admin);
    expect(r.body).toMatchObject({ ok: false, error: expect.stringContaining("535 5.7.8") });
    expect(JSON.stringify(r.body)).not.toContain("not-the-password");
  });

  test("mail: AUTH LOGIN when the server offers only LOGIN; a certificate not trusted is refused", async () => {
    const login = startSmtpSink({ users: { bob: "b0b-secret" }, mechanisms: ["LOGIN"] });
    const port = await login.ready;
    try {
      const mail = (name: string, ca: string) => `
[channel.${name}]
type = "email"
host = "127.0.0.1"
port = ${port}
username = "bob"
password = "b0b-secret"
from = "alerts@example.org"
to = ["ops@example.org"]
ca_file = "${ca}"
`;
      // The other sink's certificate is a different self-signed one: not the CA of this server.
      const a = await appWith("", mail("login", login.certFile) + mail("untrusted", smtp.certFile));
      expect((await a.call("POST", "/api/admin/alerts/test/login", admin)).body).toMatchObject({ ok: true });
      expect(login.mails.map((x) => [x.mechanism, x.user, x.tls])).toEqual([["LOGIN", "bob", true]]);
      const refused = await a.call("POST", "/api/admin/alerts/test/untrusted", admin);
      expect(refused.body).toMatchObject({ ok: false, error: expect.stringContaining("STARTTLS") });
      expect(login.mails).toHaveLength(1);
      // The password went only inside TLS: the plain part of each session holds no AUTH.
      for (const t of login.transcripts)
        expect(t.slice(0, t.findIndex((l) => l.startsWith("S: 220 2.0.0")) + 1).some((l) => l.includes("AUTH"))).toBe(
          false,
        );
    } finally {
      await login.stop();
    }
  });

  test('mail over implicit TLS (security = "tls", port 465 style): encrypted from the first byte, then AUTH and the message', async () => {
    const smtps = startSmtpSink({ users: { carol: "c4r0l-secret" }, implicitTls: true });
    const port = await smtps.ready;
    try {
      const channel = (name: string, security: string) => `
[channel.${name}]
type = "email"
host = "127.0.0.1"
port = ${port}
security = "${security}"
timeout = "1s"
username = "carol"
password = "c4r0l-secret"
from = "alerts@example.org"
to = ["ops@example.org"]
ca_file = "${smtps.certFile}"
`;
      const a = await appWith("", channel("smtps", "tls") + channel("wrongmode", "starttls"));
      expect((await a.call("POST", "/api/admin/alerts/test/smtps", admin)).body).toMatchObject({ ok: true });
      expect(smtps.mails.map((x) => [x.mechanism, x.user, x.tls, x.to])).toEqual([
        ["PLAIN", "carol", true, ["ops@example.org"]],
      ]);
      expect(parseMail(smtps.mails[0]!.data).headers.from).toContain("alerts@example.org");
      // STARTTLS against a server that speaks TLS at once: both wait for the other; the timeout ends it with an error, no mail.
      const wrong = await a.call("POST", "/api/admin/alerts/test/wrongmode", admin);
      expect(wrong.body).toMatchObject({ ok: false });
      expect(JSON.stringify(wrong.body)).not.toContain("c4r0l-secret");
      expect(smtps.mails).toHaveLength(1);
    } finally {
      await smtps.stop();
    }
  });

  test("without an alerts file the API says alerts are off", async () => {
    const a = await testApp({ adminToken: ADMIN });
    expect((await a.get("/api/alerts")).body).toEqual({
      enabled: false,
      evaluate_every_s: null,
      channels: [],
      rules: [],
    });
    expect((await a.get("/api/alerts/history")).body).toEqual({ events: [], next_before: null });
    expect((await a.call("POST", "/api/admin/alerts/test/x", admin)).body).toMatchObject({
      error: "not_found",
      message: expect.stringContaining("--alerts"),
    });
  });
});

describe("alerts: deliveries that fail", () => {
  test("a receiver that is down is retried with backoff and counted; ingestion answers as usual meanwhile; it arrives once when back", async () => {
    const a = await appWith(
      spike(["hook", "refused"]),
      `
[channel.refused]
type = "webhook"
url = "http://127.0.0.1:9/closed"
timeout = "2s"
`,
    );
    http.setMode("fail");
    try {
      await load(a, runs("app2", a.clock() - 10 * 60_000, 20, 10));
      const first = await round(a);
      expect(first.delivered).toMatchObject({ sent: 0, retry: 2 });
      const metrics = async () =>
        (await (await a.app.handle(new Request("http://localhost/metrics"))).text()).split("\n");
      expect(await metrics()).toEqual(
        expect.arrayContaining([
          'installstats_alert_deliveries_total{channel="hook",result="retry"} 1',
          'installstats_alert_deliveries_total{channel="refused",result="retry"} 1',
          'installstats_alert_queue{channel="hook"} 1',
          'installstats_alert_queue{channel="refused"} 1',
          'installstats_alerts_firing{rule="spike"} 1',
        ]),
      );
      const history = (await a.get("/api/alerts/history")).body.events as {
        deliveries: { channel: string; state: string; attempts: number; last_error: string }[];
      }[];
      expect(history[0]!.deliveries.map((d) => [d.channel, d.state, d.attempts])).toEqual([
        ["hook", "pending", 1],
        ["refused", "pending", 1],
      ]);
      expect(history[0]!.deliveries[0]!.last_error).toBe("HTTP 503: down for maintenance");
      // Not due again before its backoff (30 s after the first failure).
      a.clock.advance(20_000);
      expect(await a.alerts!.deliver()).toMatchObject({ sent: 0, retry: 0 });
      // Ingestion meanwhile: answered as always.
      expect((await a.post("/upload", startReport("during-outage"))).status).toBe(201);
      a.clock.advance(15_000);
      expect(await a.alerts!.deliver()).toMatchObject({ retry: 2 });
      expect(await metrics()).toContain('installstats_alert_deliveries_total{channel="hook",result="retry"} 2');
    } finally {
      http.setMode("up");
    }
    // Back up: the next attempt (60 s later) delivers it, once.
    const m = marks();
    a.clock.advance(60_000);
    expect(await a.alerts!.deliver()).toMatchObject({ sent: 1, retry: 1 });
    a.clock.advance(10 * 60_000);
    await a.alerts!.deliver();
    expect(since(m).http.map((x) => x.kind)).toEqual(["webhook"]);
    // The closed port never comes back: given up a day after it was queued, counted as failed.
    a.clock.advance(DAY);
    expect(await a.alerts!.deliver()).toMatchObject({ failed: 1 });
    const text = await (await a.app.handle(new Request("http://localhost/metrics"))).text();
    expect(text).toContain('installstats_alert_deliveries_total{channel="refused",result="failed"} 1');
    expect(text).toContain('installstats_alert_deliveries_total{channel="hook",result="sent"} 1');
    expect(text).toContain('installstats_alert_queue{channel="refused"} 0');
  });

  test("a receiver that hangs holds up no report: ingestion answers while the delivery waits for its timeout", async () => {
    const hung: net.Socket[] = [];
    const hang = net.createServer((s) => void hung.push(s));
    const port = await new Promise<number>((r) =>
      hang.listen(0, "127.0.0.1", () => r((hang.address() as net.AddressInfo).port)),
    );
    try {
      const a = await appWith(
        spike(["hang"]),
        `
[channel.hang]
type = "webhook"
url = "http://127.0.0.1:${port}/hook"
timeout = "3s"
`,
      );
      await load(a, runs("app3", a.clock() - 10 * 60_000, 20, 10));
      await a.alerts!.evaluate();
      const started = performance.now();
      const delivery = a.alerts!.deliver();
      const answers: number[] = [];
      for (let i = 0; i < 20; i++) {
        const t = performance.now();
        expect((await a.post("/upload", startReport(`hang-${i}`))).status).toBe(201);
        answers.push(performance.now() - t);
      }
      const ingestDone = performance.now() - started;
      expect(await delivery).toMatchObject({ retry: 1 });
      const deliveryDone = performance.now() - started;
      // The reports were answered while the delivery still waited for the hung receiver.
      expect(ingestDone).toBeLessThan(deliveryDone);
      expect(deliveryDone).toBeGreaterThan(2500);
      expect(Math.max(...answers)).toBeLessThan(1000);
      const [event] = (await a.get("/api/alerts/history")).body.events as { deliveries: { last_error: string }[] }[];
      expect(event!.deliveries[0]!.last_error).toBe("no answer within 3 s");
    } finally {
      for (const s of hung) s.destroy();
      hang.close();
    }
  });
});
