// Real receivers for alert channels, on loopback: one HTTP server that takes the webhook kinds
// (generic JSON, ntfy, Gotify, Discord, Slack) and checks each request the way that service
// would, and an SMTP server speaking real SMTP with STARTTLS (a self-signed certificate made with
// openssl for the test) and AUTH PLAIN / LOGIN.
import { mkdtempSync, readFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";

export interface Received {
  kind: "webhook" | "ntfy" | "gotify" | "discord" | "slack";
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/**
 * Paths: /hook (webhook), /ntfy (ntfy's root: JSON publishing), /gotify/message, /discord/<id>/<token>,
 * /slack/<token>. A request that is not what that service takes is answered 400 (as the service
 * would) and recorded in `refused`.
 */
export function startHttpReceiver(opts: { ntfyToken?: string; gotifyToken?: string; hookToken?: string } = {}) {
  const received: Received[] = [];
  const refused: string[] = [];
  let mode: "up" | "fail" = "up";
  const refuse = (why: string) => {
    refused.push(why);
    return Response.json({ error: why }, { status: 400 });
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const headers = Object.fromEntries(req.headers);
      if (mode === "fail") return new Response("down for maintenance", { status: 503 });
      if (req.method !== "POST") return refuse(`${req.method} ${url.pathname}: only POST`);
      if (!(headers["content-type"] ?? "").startsWith("application/json"))
        return refuse(`${url.pathname}: content-type ${headers["content-type"]}`);
      let body: Record<string, unknown>;
      try {
        body = (await req.json()) as Record<string, unknown>;
      } catch {
        return refuse(`${url.pathname}: body is not JSON`);
      }
      const take = (kind: Received["kind"], answer: Response) => {
        received.push({ kind, path: url.pathname, headers, body });
        return answer;
      };
      if (url.pathname === "/hook") {
        if (opts.hookToken && headers.authorization !== `Bearer ${opts.hookToken}`)
          return new Response("no", { status: 401 });
        if (typeof body.title !== "string" || typeof body.text !== "string" || typeof body.link !== "string")
          return refuse("webhook: title, text, link");
        return take("webhook", new Response(null, { status: 204 }));
      }
      if (url.pathname === "/ntfy") {
        // ntfy's JSON publishing: topic, message, title, priority 1-5, tags, click.
        if (opts.ntfyToken && headers.authorization !== `Bearer ${opts.ntfyToken}`)
          return Response.json({ code: 40101, error: "unauthorized" }, { status: 401 });
        if (typeof body.topic !== "string" || !/^[-_A-Za-z0-9]{1,64}$/.test(body.topic)) return refuse("ntfy: topic");
        if (typeof body.message !== "string" || typeof body.title !== "string") return refuse("ntfy: message, title");
        if (body.priority !== undefined && ![1, 2, 3, 4, 5].includes(body.priority as number))
          return refuse("ntfy: priority");
        if (body.tags !== undefined && !(Array.isArray(body.tags) && body.tags.every((t) => typeof t === "string")))
          return refuse("ntfy: tags");
        if (body.click !== undefined && typeof body.click !== "string") return refuse("ntfy: click");
        return take("ntfy", Response.json({ id: crypto.randomUUID(), event: "message", topic: body.topic }));
      }
      if (url.pathname === "/gotify/message") {
        // Gotify: the application token in X-Gotify-Key; message required, title, priority, extras.
        if (headers["x-gotify-key"] !== opts.gotifyToken)
          return Response.json({ error: "Unauthorized", errorCode: 401 }, { status: 401 });
        if (typeof body.message !== "string" || body.message === "") return refuse("gotify: message");
        if (body.priority !== undefined && !Number.isInteger(body.priority)) return refuse("gotify: priority");
        return take(
          "gotify",
          Response.json({ id: received.length + 1, appid: 1, message: body.message, title: body.title }),
        );
      }
      if (/^\/discord\/\d+\/[\w-]+$/.test(url.pathname)) {
        // Discord: content or embeds; an embed's title <= 256, description <= 4096, color an integer.
        const embeds = body.embeds as Record<string, unknown>[] | undefined;
        if (typeof body.content !== "string" && !(Array.isArray(embeds) && embeds.length > 0))
          return refuse("discord: content or embeds");
        for (const e of embeds ?? []) {
          if (typeof e.title === "string" && e.title.length > 256) return refuse("discord: embed title over 256");
          if (typeof e.description === "string" && e.description.length > 4096)
            return refuse("discord: embed description over 4096");
          if (e.color !== undefined && !Number.isInteger(e.color)) return refuse("discord: color");
        }
        return take("discord", new Response(null, { status: 204 }));
      }
      if (/^\/slack\/[\w-]+$/.test(url.pathname)) {
        if (typeof body.text !== "string" || body.text === "") return refuse("slack: text");
        return take("slack", new Response("ok"));
      }
      return new Response("not found", { status: 404 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port!,
    received,
    refused,
    /** fail: every request answered 503 (the receiver is there, its service is not). */
    setMode(next: "up" | "fail") {
      mode = next;
    },
    of: (kind: Received["kind"]) => received.filter((r) => r.kind === kind),
    stop: () => server.stop(true),
  };
}

/** A self-signed certificate for 127.0.0.1 and localhost, made with openssl in the run's temporary directory. */
function selfSignedCertificate(): { key: string; cert: string; certFile: string } {
  const dir = mkdtempSync(join(tmpdir(), "installstats-cert-"));
  const keyFile = join(dir, "key.pem");
  const certFile = join(dir, "cert.pem");
  const r = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  if (r.exitCode !== 0) throw new Error(`openssl failed: ${r.stderr.toString()}`);
  return { key: readFileSync(keyFile, "utf8"), cert: readFileSync(certFile, "utf8"), certFile };
}

interface SinkMail {
  from: string;
  to: string[];
  /** The message as sent after DATA, dot-stuffing undone. */
  data: string;
  /** How the session was: over TLS when it was sent, the user it authenticated as, and how. */
  tls: boolean;
  user: string | null;
  mechanism: "PLAIN" | "LOGIN" | null;
}

/**
 * An SMTP server: EHLO offers STARTTLS before TLS and AUTH PLAIN LOGIN only after it; MAIL needs
 * AUTH when `users` are given. `mechanisms` limits what it offers (a server offering LOGIN only).
 */
/** `implicitTls`: TLS from the first byte (port 465, "SMTPS"), no STARTTLS. */
export function startSmtpSink(opts: {
  users?: Record<string, string>;
  mechanisms?: ("PLAIN" | "LOGIN")[];
  implicitTls?: boolean;
}) {
  const { key, cert, certFile } = selfSignedCertificate();
  const mails: SinkMail[] = [];
  const transcripts: string[][] = [];
  const mechanisms = opts.mechanisms ?? ["PLAIN", "LOGIN"];
  const server = net.createServer((plain) => {
    const log: string[] = [];
    transcripts.push(log);
    let socket: net.Socket | tls.TLSSocket = plain;
    let secure = false;
    let user: string | null = null;
    let mechanism: SinkMail["mechanism"] = null;
    let from: string | null = null;
    let to: string[] = [];
    let buffer = "";
    let state: "command" | "data" | "auth-login-user" | "auth-login-pass" = "command";
    let loginUser = "";
    let data: string[] = [];
    const say = (line: string) => {
      log.push(`S: ${line}`);
      socket.write(`${line}\r\n`);
    };
    const check = (u: string, p: string) => opts.users?.[u] === p;

    const onLine = (line: string) => {
      log.push(`C: ${line}`);
      if (state === "data") {
        if (line === ".") {
          mails.push({ from: from!, to, data: data.join("\r\n"), tls: secure, user, mechanism });
          data = [];
          from = null;
          to = [];
          state = "command";
          say("250 2.0.0 queued");
        } else data.push(line.startsWith(".") ? line.slice(1) : line);
        return;
      }
      if (state === "auth-login-user") {
        loginUser = Buffer.from(line, "base64").toString();
        state = "auth-login-pass";
        say(`334 ${Buffer.from("Password:").toString("base64")}`);
        return;
      }
      if (state === "auth-login-pass") {
        state = "command";
        if (check(loginUser, Buffer.from(line, "base64").toString())) {
          user = loginUser;
          mechanism = "LOGIN";
          say("235 2.7.0 Authentication successful");
        } else say("535 5.7.8 Authentication credentials invalid");
        return;
      }
      const [verb = "", ...rest] = line.split(" ");
      const arg = rest.join(" ");
      switch (verb.toUpperCase()) {
        case "EHLO": {
          const ext = secure ? [`AUTH ${mechanisms.join(" ")}`] : ["STARTTLS"];
          const lines = ["sink.local", "8BITMIME", ...ext];
          lines.forEach((l, i) => say(`250${i === lines.length - 1 ? " " : "-"}${l}`));
          return;
        }
        case "STARTTLS": {
          if (secure) return say("503 already secure");
          say("220 2.0.0 Ready to start TLS");
          plain.removeAllListeners("data");
          const wrapped = new tls.TLSSocket(plain, { isServer: true, key, cert });
          socket = wrapped;
          secure = true;
          buffer = "";
          wrapped.on("data", onData);
          wrapped.on("error", () => {});
          return;
        }
        case "AUTH": {
          if (!secure) return say("538 5.7.11 Encryption required for requested authentication mechanism");
          const [mech, initial] = arg.split(" ");
          if (mech === "PLAIN" && mechanisms.includes("PLAIN")) {
            const [, u = "", p = ""] = Buffer.from(initial ?? "", "base64")
              .toString()
              .split("\0");
            if (check(u, p)) {
              user = u;
              mechanism = "PLAIN";
              return say("235 2.7.0 Authentication successful");
            }
            return say("535 5.7.8 Authentication credentials invalid");
          }
          if (mech === "LOGIN" && mechanisms.includes("LOGIN")) {
            state = "auth-login-user";
            return say(`334 ${Buffer.from("Username:").toString("base64")}`);
          }
          return say("504 5.5.4 Unrecognized authentication type");
        }
        case "MAIL":
          if (opts.users && user === null) return say("530 5.7.0 Authentication required");
          from = /<([^>]*)>/.exec(arg)?.[1] ?? null;
          return say("250 2.1.0 Ok");
        case "RCPT":
          if (from === null) return say("503 5.5.1 need MAIL first");
          to.push(/<([^>]*)>/.exec(arg)?.[1] ?? "");
          return say("250 2.1.5 Ok");
        case "DATA":
          if (to.length === 0) return say("503 5.5.1 need RCPT first");
          state = "data";
          return say("354 End data with <CR><LF>.<CR><LF>");
        case "QUIT":
          say("221 2.0.0 Bye");
          socket.end();
          return;
        default:
          return say("502 5.5.2 Command not recognized");
      }
    };
    const onData = (chunk: Buffer | string) => {
      buffer += String(chunk);
      let i: number;
      while ((i = buffer.indexOf("\r\n")) >= 0) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        onLine(line);
      }
    };
    if (opts.implicitTls) {
      const wrapped = new tls.TLSSocket(plain, { isServer: true, key, cert });
      socket = wrapped;
      secure = true;
      wrapped.on("data", onData);
      wrapped.on("error", () => {});
    } else plain.on("data", onData);
    plain.on("error", () => {});
    say("220 sink.local ESMTP");
  });
  const ready = new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port)),
  );
  return { ready, mails, transcripts, certFile, stop: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The body of a mail from the sink: headers and text, base64 decoded when it was sent so. */
export function parseMail(data: string): { headers: Record<string, string>; text: string } {
  const [head = "", ...rest] = data.split("\r\n\r\n");
  const headers: Record<string, string> = {};
  for (const line of head.split("\r\n")) {
    const i = line.indexOf(":");
    headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  const body = rest.join("\r\n\r\n");
  const text =
    headers["content-transfer-encoding"] === "base64"
      ? Buffer.from(body.replace(/\s+/g, ""), "base64").toString()
      : body.replaceAll("\r\n", "\n");
  const subject = /^=\?UTF-8\?B\?(.*)\?=$/.exec(headers.subject ?? "");
  if (subject) headers.subject = Buffer.from(subject[1]!, "base64").toString();
  return { headers, text };
}
