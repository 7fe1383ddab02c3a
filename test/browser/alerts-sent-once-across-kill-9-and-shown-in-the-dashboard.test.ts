// Alerts with the compiled binary: a bad alerts file stops serve (exit 2, one line); a failure
// spike sent through its scheduled jobs to a real receiver, once, also across a kill -9 while the
// receiver was down (the message waited in the database); the alerts CLI against the same
// database; and the dashboard's Alerts view in headless Chromium (admin actions only with the
// admin token).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { ROOT, tempDir } from "../helpers/tmp.ts";
import { launchBrowser, openView, watchedPage } from "../helpers/browser.ts";
import { startHttpReceiver } from "../helpers/alert-receivers.ts";
import { startReport } from "../helpers/app.ts";
import type { AlertMessage } from "../../src/alerts/message.ts";

setDefaultTimeout(180_000);

const ADMIN = "e2e-alerts-admin";
const NTFY_TOKEN = "tk_e2e_secret_token";
const SHOTS = join(ROOT, "test-artifacts/screenshots");

let bin: string;
let dir: string;
let receiver: ReturnType<typeof startHttpReceiver>;
let file: string;
let db: string;
let server: RunningServer | null = null;
let browser: Browser;

const rules = (url: string) => `
evaluate_every = "10s"

[channel.hook]
type = "webhook"
url = "${url}/hook"

[channel.phone]
type = "ntfy"
url = "${url}/ntfy/e2e-topic"
token = "\${NTFY_TOKEN}"

[[rule]]
id = "spike"
type = "failure_rate"
window = "1h"
min_runs = 5
above = 0.3
send_to = ["hook", "phone"]
`;

async function run(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([bin, ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", NTFY_TOKEN, ...env },
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { out, err, code };
}

const post = (path: string, body: unknown) =>
  fetch(server!.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, ms = 40_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(250);
  }
}

const history = async () =>
  (
    (await (await fetch(`${server!.url}/api/alerts/history`)).json()) as {
      events: { status: string; deliveries: { channel: string; state: string; attempts: number }[] }[];
    }
  ).events;

beforeAll(async () => {
  bin = await compiledBinary();
  dir = tempDir("installstats-alerts-e2e-");
  receiver = startHttpReceiver({ ntfyToken: NTFY_TOKEN });
  file = join(dir, "alerts.toml");
  writeFileSync(file, rules(receiver.url));
  db = join(dir, "a.db");
  browser = await launchBrowser();
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  await server?.stop();
  await browser?.close();
  receiver?.stop();
});

describe("alerts with the compiled binary", () => {
  test("a bad alerts file: serve refuses to start (exit 2, one line naming the file and line); alerts check says the same", async () => {
    const bad = join(dir, "bad.toml");
    writeFileSync(bad, rules(receiver.url).replace('window = "1h"', 'window = "45m"'));
    const served = await run(["serve", "--port", "0", "--db", join(dir, "never.db"), "--alerts", bad]);
    expect(served.code).toBe(2);
    expect(served.err.trim()).toBe(
      `installstats: alerts file ${bad}, line 16 (rule spike): window must be a duration such as 6h, 24h or 7d (whole hours: rules read hourly rollups), got "45m"`,
    );
    expect(await Bun.file(join(dir, "never.db")).exists()).toBe(false);
    const checked = await run(["alerts", "check", bad]);
    expect(checked.code).toBe(2);
    expect(checked.err.trim()).toBe(served.err.trim());
    const unset = await run(["alerts", "check", file], { NTFY_TOKEN: "" });
    expect(unset.code).toBe(2);
    expect(unset.err).toContain("(channel phone): token names the environment variable NTFY_TOKEN, which is not set");
    const good = await run(["alerts", "check", file]);
    expect(good.code).toBe(0);
    expect(good.out).toContain(`${file}: ok, 1 rules, 2 channels`);
    expect(good.out).toContain(
      "rule spike: failure rate of all apps together over 1h above 30% (at least 5 finished runs); to hook, phone",
    );
    expect((await run(["alerts", "lsit"])).err.trim()).toBe(
      'installstats: unknown alerts action "lsit"; did you mean list? (installstats alerts list | history | test <channel> | silence <rule> --for 2h | unsilence <rule> | check [file])',
    );
  });

  test("a spike is sent once by the server's own jobs; a message queued while the receiver is down survives a kill -9 and is sent once after", async () => {
    receiver.setMode("fail");
    server = await startServer(bin, ["--db", db, "--alerts", file], { INSTALLSTATS_ADMIN_TOKEN: ADMIN, NTFY_TOKEN });
    const firstUrl = server.url;
    expect(server.stderr()).not.toContain(NTFY_TOKEN);
    for (let i = 0; i < 8; i++) {
      expect((await post("/upload", startReport(`e2e-${i}`))).status).toBe(201);
      expect(
        (
          await post("/upload/updatestatus", {
            random_id: `e2e-${i}`,
            status: i < 5 ? "failed" : "done",
            error: i < 5 ? "exit code 100: apt failed" : "none",
          })
        ).status,
      ).toBe(200);
    }
    // Fired, and tried while the receiver answers 503.
    await until("a failed delivery attempt", async () =>
      (await history()).find((e) => e.status === "firing" && e.deliveries.every((d) => d.attempts >= 1)),
    );
    expect(receiver.received).toHaveLength(0);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toContain('installstats_alert_deliveries_total{channel="hook",result="retry"} 1');
    expect(metrics).toContain('installstats_alert_queue{channel="hook"} 1');
    await server.stop("SIGKILL");

    receiver.setMode("up");
    server = await startServer(bin, ["--db", db, "--alerts", file], { INSTALLSTATS_ADMIN_TOKEN: ADMIN, NTFY_TOKEN });
    // The retry is due 30 s after the attempt before the kill.
    await until("the message after the restart", async () => receiver.received.length >= 2, 60_000);
    // Two more evaluation rounds: nothing new (the firing is in the database, not in memory).
    await Bun.sleep(21_000);
    expect(receiver.received.map((r) => r.kind).sort()).toEqual(["ntfy", "webhook"]);
    const msg = receiver.of("webhook")[0]!.body as unknown as AlertMessage;
    expect(msg).toMatchObject({ status: "firing", rule: "spike", values: { failed: 5, runs: 8, rate: 0.625 } });
    // Made by the first server, linking to where it listened (no --public-url).
    expect(msg.link).toBe(`${firstUrl.replace("127.0.0.1", "localhost")}/failures?days=1`);
    expect(server.stderr() + receiver.received.map((r) => JSON.stringify(r.body)).join("")).not.toContain(NTFY_TOKEN);
    expect(receiver.of("ntfy")[0]!.headers.authorization).toBe(`Bearer ${NTFY_TOKEN}`);
    const [event] = await history();
    expect(event!.deliveries.map((d) => [d.channel, d.state])).toEqual([
      ["hook", "sent"],
      ["phone", "sent"],
    ]);
  });

  test("the alerts CLI beside the running server: list, history, test, silence", async () => {
    const args = ["--db", db, "--alerts", file];
    const list = await run(["alerts", "list", ...args]);
    expect(list.code).toBe(0);
    expect(list.out).toContain("spike  FIRING  failure rate of all apps together over 1h above 30%");
    expect(list.out).toContain("FIRING spike: all apps failure rate 62.5% (5 of 8 runs, last 1h)");
    const json = JSON.parse((await run(["alerts", "list", "--json", ...args])).out) as {
      rules: { id: string; status: string }[];
      channels: { target: string }[];
    };
    expect(json.rules.map((r) => [r.id, r.status])).toEqual([["spike", "firing"]]);
    expect(JSON.stringify(json)).not.toContain(NTFY_TOKEN);
    expect(JSON.stringify(json)).not.toContain("e2e-topic");
    const hist = (await run(["alerts", "history", "--db", db])).out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { rule: string; status: string });
    expect(hist.map((e) => [e.rule, e.status])).toEqual([["spike", "firing"]]);
    const before = receiver.received.length;
    const tested = await run(["alerts", "test", "phone", ...args]);
    expect(tested.code).toBe(0);
    expect(JSON.parse(tested.out)).toMatchObject({ channel: "phone", ok: true, target: `${receiver.url}/***` });
    expect(receiver.received.slice(before).map((r) => (r.body as { title: string }).title)).toEqual([
      "TEST installstats: channel phone works",
    ]);
    const silenced = await run(["alerts", "silence", "spike", "--for", "2h", ...args]);
    expect(silenced.code).toBe(0);
    expect((await (await fetch(`${server!.url}/api/alerts`)).json()) as object).toMatchObject({
      rules: [{ id: "spike", silenced_until: (JSON.parse(silenced.out) as { silenced_until: string }).silenced_until }],
    });
    expect((await run(["alerts", "unsilence", "spike", ...args])).code).toBe(0);
    const wrong = await run(["alerts", "silence", "spiek", "--for", "2h", ...args]);
    expect(wrong.code).toBe(2);
    expect(wrong.err.trim()).toBe('installstats: no rule named "spiek" in the alerts file (rules: spike)');
    expect((await run(["alerts", "silence", "spike", ...args])).err.trim()).toBe(
      "installstats: alerts silence takes --for <duration> (e.g. --for 2h) or --until <date-time>, one of them",
    );
    expect((await run(["alerts", "list", "--db", db])).err.trim()).toBe(
      "installstats: alerts list needs the alerts file: --alerts <file> (or INSTALLSTATS_ALERTS)",
    );
  });

  test("the dashboard's Alerts view: rules, history, channels; test and silence only with the admin token", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const w = await watchedPage(ctx);
    const { page } = w;
    await openView(page, `${server!.url}/alerts`);
    expect(await page.locator("nav#nav a[aria-current=page]").textContent()).toBe("Alerts");
    expect(await page.locator('tr[data-rule="spike"]').getAttribute("data-status")).toBe("firing");
    expect(await page.locator('tr[data-rule="spike"] .firing-item').textContent()).toContain(
      "FIRING spike: all apps failure rate 62.5% (5 of 8 runs, last 1h)",
    );
    const events = page.locator("li.alert-event");
    expect(await events.count()).toBe(1);
    expect(await events.first().getAttribute("data-status")).toBe("firing");
    expect(await page.locator('li.alert-event .chip[data-channel="hook"]').getAttribute("data-state")).toBe("sent");
    // Its link opens the failures view on this server.
    expect(await page.locator("li.alert-event a").getAttribute("href")).toBe("/failures?days=1");
    // No admin token: no silence or test buttons, and no admin request was made.
    expect(await page.locator("button.silence, button.test-channel").count()).toBe(0);
    expect(await page.locator("#alert-channels").textContent()).not.toContain(NTFY_TOKEN);
    await page.screenshot({ path: join(SHOTS, "alerts-view.png"), fullPage: true });

    // A wrong admin token is refused when it is used.
    await page.fill("#admin-token", "wrong-token");
    await page.click("#alerts-admin-form button[type=submit]");
    await page.waitForSelector('button.test-channel[data-channel="hook"]');
    await page.click('button.test-channel[data-channel="hook"]');
    await page.waitForSelector('tr[data-channel="hook"] .error-box');
    expect(await page.locator('tr[data-channel="hook"] .test-result').textContent()).toBe(
      "The server refused the admin token.",
    );
    await page.click("#forget-admin-token");
    await page.waitForSelector("#admin-token");

    const before = receiver.received.length;
    await page.fill("#admin-token", ADMIN);
    await page.click("#alerts-admin-form button[type=submit]");
    await page.waitForSelector('button.test-channel[data-channel="hook"]');
    await page.click('button.test-channel[data-channel="hook"]');
    await page.waitForSelector('tr[data-channel="hook"] [data-ok="true"]');
    expect(receiver.received.slice(before).map((r) => r.kind)).toEqual(["webhook"]);

    await page.selectOption('tr[data-rule="spike"] select.silence-for', "8h");
    await page.click('button.silence[data-rule="spike"]');
    await page.waitForSelector('tr[data-rule="spike"] [data-silenced-until]');
    const until = await page.locator('tr[data-rule="spike"] [data-silenced-until]').getAttribute("data-silenced-until");
    expect(Math.abs(Date.parse(until!) - (Date.now() + 8 * 3_600_000))).toBeLessThan(60_000);
    await page.screenshot({ path: join(SHOTS, "alerts-view-admin.png"), fullPage: true });
    await page.click('button.unsilence[data-rule="spike"]');
    await page.waitForSelector('button.silence[data-rule="spike"]');
    expect(
      ((await (await fetch(`${server!.url}/api/alerts`)).json()) as { rules: { silenced_until: string | null }[] })
        .rules[0]!.silenced_until,
    ).toBeNull();
    // The one refusal is the wrong token's, on purpose.
    expect(w.problems).toEqual([
      "console: Failed to load resource: the server responded with a status of 401 (Unauthorized)",
    ]);
    expect(w.outside).toEqual([]);
    await ctx.close();
  });
});
