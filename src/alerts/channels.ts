// Channels: one alert message shaped as each kind of receiver takes it, and sent. Secrets (tokens,
// passwords, webhook URLs) never leave here in an error text or a description.
import type { AlertMessage } from "./message.ts";
import type { Channel } from "./rules.ts";
import { sendMail } from "./smtp.ts";

/** What one attempt came to; `retryAfterMs`: the receiver asked to wait (HTTP 429 Retry-After). */
export type SendResult = { ok: true } | { ok: false; error: string; retryAfterMs: number | null };

/** An HTTP request as a channel makes it. */
interface HttpRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

const COLORS = { firing: 0xd64541, resolved: 0x2e8b57, test: 0x3b7dd8 } as const;

/** ntfy's JSON publishing goes to the server's root with the topic in the body: no header has to carry UTF-8 text. */
function ntfy(c: Extract<Channel, { type: "ntfy" }>, m: AlertMessage): HttpRequest {
  const url = new URL(c.url);
  const segments = url.pathname.split("/").filter((s) => s !== "");
  const topic = segments.pop() ?? "";
  url.pathname = `/${segments.join("/")}`;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (c.token !== null) headers.authorization = `Bearer ${c.token}`;
  else if (c.username !== null && c.password !== null)
    headers.authorization = `Basic ${Buffer.from(`${c.username}:${c.password}`).toString("base64")}`;
  const priority = m.status === "firing" ? (c.priority ?? 4) : 3;
  const tags = [
    m.status === "firing" ? "rotating_light" : m.status === "resolved" ? "white_check_mark" : "test_tube",
    ...c.tags,
  ];
  return {
    url: url.toString().replace(/\/$/, "") || url.origin,
    headers,
    body: JSON.stringify({ topic, title: m.title, message: m.text, priority, tags, click: m.link }),
  };
}

function gotify(c: Extract<Channel, { type: "gotify" }>, m: AlertMessage): HttpRequest {
  const priority = m.status === "firing" ? (c.priority ?? 8) : 4;
  return {
    url: `${c.url.replace(/\/+$/, "")}/message`,
    headers: { "content-type": "application/json", "x-gotify-key": c.token },
    body: JSON.stringify({
      title: m.title,
      message: m.text,
      priority,
      extras: { "client::display": { contentType: "text/plain" }, "client::notification": { click: { url: m.link } } },
    }),
  };
}

const cut = (s: string, n: number): string => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

function discord(c: Extract<Channel, { type: "discord" }>, m: AlertMessage): HttpRequest {
  // Texts from installer scripts (error lines) must not ping anyone: no mentions are parsed.
  const embed = {
    title: cut(m.title, 256),
    description: cut(m.text, 4096),
    url: m.link,
    color: COLORS[m.status],
    timestamp: m.at,
  };
  return {
    url: c.url,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      ...(c.username ? { username: c.username } : {}),
      embeds: [embed],
      allowed_mentions: { parse: [] },
    }),
  };
}

/** Slack's mrkdwn reads &, < and > as markup: escaped, so a text can neither link nor mention. */
const slackEscape = (s: string): string => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** `text` alone: Slack, Mattermost and Rocket.Chat incoming webhooks all take it. */
function slack(c: Extract<Channel, { type: "slack" }>, m: AlertMessage): HttpRequest {
  const lines = m.text.split("\n").filter((l) => !l.startsWith("Dashboard: "));
  const text = `*${slackEscape(m.title)}*\n${lines.map(slackEscape).join("\n")}\n<${m.link}|Open in the dashboard>`;
  return {
    url: c.url,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...(c.username ? { username: c.username } : {}), text }),
  };
}

function webhook(c: Extract<Channel, { type: "webhook" }>, m: AlertMessage): HttpRequest {
  return { url: c.url, headers: { "content-type": "application/json", ...c.headers }, body: JSON.stringify(m) };
}

/** The HTTP request of a channel that speaks HTTP. */
function requestOf(c: Exclude<Channel, { type: "email" }>, m: AlertMessage): HttpRequest {
  switch (c.type) {
    case "webhook":
      return webhook(c, m);
    case "ntfy":
      return ntfy(c, m);
    case "gotify":
      return gotify(c, m);
    case "discord":
      return discord(c, m);
    case "slack":
      return slack(c, m);
  }
}

/** What of a channel's settings is secret: never in a log, an API answer or an error text. */
function secretsOf(c: Channel): string[] {
  const list: (string | null)[] = [];
  switch (c.type) {
    case "email":
      list.push(c.password);
      break;
    case "webhook":
      list.push(c.url, new URL(c.url).pathname + new URL(c.url).search, ...Object.values(c.headers));
      break;
    case "ntfy":
      list.push(c.url, new URL(c.url).pathname, c.token, c.password);
      break;
    case "gotify":
      list.push(c.token);
      break;
    case "discord":
    case "slack":
      list.push(c.url, new URL(c.url).pathname);
      break;
  }
  // Longest first, so a URL is masked whole before its path; very short values are not secrets worth a match.
  return list.filter((s): s is string => s !== null && s.length >= 4 && s !== "/").sort((a, b) => b.length - a.length);
}

/** `text` with every secret of `c` replaced by ***. */
function redact(c: Channel, text: string): string {
  let out = text;
  for (const s of secretsOf(c)) out = out.split(s).join("***");
  return out;
}

/** Where a channel sends, with its secrets masked: scheme and host of a URL, the server and recipients of mail. */
export function describeChannel(c: Channel): string {
  if (c.type === "email") return `smtp ${c.host}:${c.port} (${c.security}) to ${c.to.join(", ")}`;
  const url = new URL(c.url);
  return `${url.protocol}//${url.host}/***`;
}

/** Sends `m` to `c`: one attempt, within the channel's timeout. */
export async function sendTo(c: Channel, m: AlertMessage): Promise<SendResult> {
  try {
    if (c.type === "email") {
      await sendMail(
        { ...c, timeoutMs: c.timeoutMs },
        { from: c.from, to: c.to, subject: m.title, text: m.text, at: Date.parse(m.at) },
      );
      return { ok: true };
    }
    const r = requestOf(c, m);
    const res = await fetch(r.url, {
      method: "POST",
      headers: r.headers,
      body: r.body,
      signal: AbortSignal.timeout(c.timeoutMs),
      redirect: "error",
    });
    if (res.ok) {
      await res.body?.cancel();
      return { ok: true };
    }
    const body = (await res.text().catch(() => "")).slice(0, 200).replace(/\s+/g, " ");
    const after = Number(res.headers.get("retry-after"));
    return {
      ok: false,
      error: redact(c, `HTTP ${res.status}${body ? `: ${body}` : ""}`),
      retryAfterMs: res.status === 429 && Number.isFinite(after) && after > 0 ? after * 1000 : null,
    };
  } catch (e) {
    const err = e as Error;
    const why = err.name === "TimeoutError" ? `no answer within ${c.timeoutMs / 1000} s` : err.message;
    return { ok: false, error: redact(c, why), retryAfterMs: null };
  }
}
