// A small SMTP client for alert mail (RFC 5321): implicit TLS or STARTTLS, AUTH PLAIN or LOGIN,
// one plain-text message to a few recipients. Written here rather than taken from a library:
// this is all alerts need, and it adds nothing to the binary (docs/decisions/2026-11-26-alerts.md).
import { readFileSync } from "node:fs";
import net from "node:net";
import { hostname } from "node:os";
import tls from "node:tls";

export interface SmtpSettings {
  host: string;
  port: number;
  security: "starttls" | "tls" | "none";
  username: string | null;
  password: string | null;
  caFile: string | null;
  tlsVerify: boolean;
  timeoutMs: number;
}

export interface Mail {
  from: string;
  to: readonly string[];
  subject: string;
  text: string;
  /** RFC 5322 Date and Message-ID come from this instant. */
  at: number;
}

/** An SMTP conversation that went wrong, with the server's reply when there was one. */
class SmtpError extends Error {}

/** The address inside "Name <a@b>", or the text itself. */
const addressOf = (mailbox: string): string => /<([^>]+)>/.exec(mailbox)?.[1] ?? mailbox.trim();
/** No line breaks in a header: a title cannot add headers. */
const oneLine = (s: string): string => s.replace(/[\r\n]+/g, " ");
/** RFC 2047 for a header with characters beyond ASCII. */
const encodedWord = (s: string): string =>
  /^[\x20-\x7e]*$/.test(s) ? s : `=?UTF-8?B?${Buffer.from(s).toString("base64")}?=`;

/** The message as sent after DATA: headers, a blank line, the body; CRLF line ends, dots stuffed, ended by a lone dot. */
function formatMail(mail: Mail, domain: string): string {
  const plain = /^[\x20-\x7e\r\n\t]*$/.test(mail.text) && mail.text.split("\n").every((l) => l.length <= 900);
  const body = plain
    ? mail.text.replace(/\r?\n/g, "\r\n")
    : Buffer.from(mail.text).toString("base64").replace(/.{76}/g, "$&\r\n");
  const headers = [
    `From: ${oneLine(mail.from)}`,
    `To: ${mail.to.map(oneLine).join(", ")}`,
    `Subject: ${encodedWord(oneLine(mail.subject))}`,
    `Date: ${new Date(mail.at).toUTCString().replace("GMT", "+0000")}`,
    `Message-ID: <${crypto.randomUUID()}@${domain}>`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    `Content-Transfer-Encoding: ${plain ? "7bit" : "base64"}`,
    "Auto-Submitted: auto-generated",
  ];
  const stuffed = `${headers.join("\r\n")}\r\n\r\n${body}`.replace(/(^|\r\n)\./g, "$1..");
  return `${stuffed}${stuffed.endsWith("\r\n") ? "" : "\r\n"}.\r\n`;
}

/** Reads replies off a socket: a reply is lines "250-..." ending with "250 ...". */
class Conversation {
  private buffer = "";
  private waiting: ((line: string) => void) | null = null;
  private lines: string[] = [];
  private failure: Error | null = null;

  constructor(
    private socket: net.Socket | tls.TLSSocket,
    private readonly timeoutMs: number,
  ) {
    this.attach(socket);
  }

  attach(socket: net.Socket | tls.TLSSocket): void {
    this.socket = socket;
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      this.buffer += chunk;
      let i: number;
      while ((i = this.buffer.indexOf("\n")) >= 0) {
        this.lines.push(this.buffer.slice(0, i).replace(/\r$/, ""));
        this.buffer = this.buffer.slice(i + 1);
      }
      this.wake();
    });
    socket.on("error", (e) => {
      this.failure = e;
      this.wake();
    });
    socket.on("close", () => {
      this.failure ??= new SmtpError("the server closed the connection");
      this.wake();
    });
  }

  /** Stops reading from the plain socket before it is wrapped in TLS (STARTTLS). */
  detach(): net.Socket {
    this.socket.removeAllListeners("data").removeAllListeners("error").removeAllListeners("close");
    return this.socket as net.Socket;
  }

  private wake(): void {
    const w = this.waiting;
    this.waiting = null;
    w?.("");
  }

  private async line(): Promise<string> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      const next = this.lines.shift();
      if (next !== undefined) return next;
      if (this.failure) throw this.failure;
      const left = deadline - Date.now();
      if (left <= 0) throw new SmtpError(`no answer from the server within ${this.timeoutMs / 1000} s`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** One reply; anything but `expect` is an SmtpError quoting the server. */
  async reply(expect: number | readonly number[], during: string): Promise<string[]> {
    const lines: string[] = [];
    for (;;) {
      const line = await this.line();
      lines.push(line);
      if (!/^\d{3}-/.test(line)) break;
    }
    const code = Number(lines.at(-1)!.slice(0, 3));
    if (!(typeof expect === "number" ? [expect] : expect).includes(code))
      throw new SmtpError(`${during}: the server answered ${lines.at(-1)!.slice(0, 200)}`);
    return lines.map((l) => l.slice(4));
  }

  send(text: string): void {
    this.socket.write(text);
  }

  async command(text: string, expect: number | readonly number[], during = text.split(" ")[0]!): Promise<string[]> {
    this.send(`${text}\r\n`);
    return this.reply(expect, during);
  }

  close(): void {
    this.socket.destroy();
  }
}

function connect(s: SmtpSettings, ca: string | undefined): Promise<net.Socket | tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new SmtpError(`cannot connect to ${s.host}:${s.port} within ${s.timeoutMs / 1000} s`));
    }, s.timeoutMs);
    const done = () => {
      clearTimeout(timer);
      resolve(socket);
    };
    const socket =
      s.security === "tls"
        ? tls.connect(
            {
              host: s.host,
              port: s.port,
              servername: net.isIP(s.host) ? undefined : s.host,
              ca,
              rejectUnauthorized: s.tlsVerify,
            },
            done,
          )
        : net.connect({ host: s.host, port: s.port }, done);
    socket.once("error", (e: Error) => {
      clearTimeout(timer);
      reject(new SmtpError(`cannot connect to ${s.host}:${s.port}: ${e.message}`));
    });
  });
}

function upgrade(plain: net.Socket, s: SmtpSettings, ca: string | undefined): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const secure = tls.connect(
      {
        socket: plain,
        host: s.host,
        servername: net.isIP(s.host) ? undefined : s.host,
        ca,
        rejectUnauthorized: s.tlsVerify,
      },
      () => resolve(secure),
    );
    secure.once("error", (e: Error) => reject(new SmtpError(`STARTTLS with ${s.host}: ${e.message}`)));
  });
}

/** Sends one mail; resolves once the server accepted it for delivery (250 after DATA). */
export async function sendMail(s: SmtpSettings, mail: Mail): Promise<void> {
  const ca = s.caFile === null ? undefined : readFileSync(s.caFile, "utf8");
  const name = hostname() || "installstats";
  const c = new Conversation(await connect(s, ca), s.timeoutMs);
  try {
    await c.reply(220, "greeting");
    let extensions = await c.command(`EHLO ${name}`, 250, "EHLO");
    if (s.security === "starttls") {
      if (!extensions.some((e) => /^STARTTLS\b/i.test(e)))
        throw new SmtpError(
          `${s.host} does not offer STARTTLS; use security = "tls" (port 465) or "none" on a trusted network`,
        );
      await c.command("STARTTLS", 220);
      c.attach(await upgrade(c.detach(), s, ca));
      extensions = await c.command(`EHLO ${name}`, 250, "EHLO");
    }
    if (s.username !== null && s.password !== null) {
      const auth =
        extensions
          .find((e) => /^AUTH\b/i.test(e))
          ?.toUpperCase()
          .split(/[\s=]+/)
          .slice(1) ?? [];
      if (auth.includes("PLAIN")) {
        await c.command(
          `AUTH PLAIN ${Buffer.from(`\0${s.username}\0${s.password}`).toString("base64")}`,
          235,
          "AUTH PLAIN",
        );
      } else if (auth.includes("LOGIN")) {
        await c.command("AUTH LOGIN", 334, "AUTH LOGIN");
        await c.command(Buffer.from(s.username).toString("base64"), 334, "AUTH LOGIN (user name)");
        await c.command(Buffer.from(s.password).toString("base64"), 235, "AUTH LOGIN (password)");
      } else {
        throw new SmtpError(
          `${s.host} offers no AUTH mechanism this client speaks (PLAIN, LOGIN)${auth.length > 0 ? `; it offers ${auth.join(", ")}` : ""}`,
        );
      }
    }
    await c.command(`MAIL FROM:<${addressOf(mail.from)}>`, 250, "MAIL FROM");
    for (const to of mail.to) {
      // 251 ("user not local; will forward") accepts it too.
      await c.command(`RCPT TO:<${addressOf(to)}>`, [250, 251], `RCPT TO ${to}`);
    }
    await c.command("DATA", 354);
    c.send(formatMail(mail, name));
    await c.reply(250, "end of DATA");
    c.send("QUIT\r\n");
  } finally {
    c.close();
  }
}
