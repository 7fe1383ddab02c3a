// Structured logging: one JSON object per line on stderr, or readable lines on a terminal.
export type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/**
 * Lines of one message (level + msg) are rate-limited, so a flood (a full disk failing every
 * write, a client hammering a refused path) writes a few dozen lines, not thousands: up to
 * `burst` at once, then one per `everyMs`. The next line of a message after some were dropped
 * carries `suppressed: N`, the number dropped since the last one written.
 */
interface LogLimit {
  burst: number;
  everyMs: number;
}
const LOG_LIMIT: LogLimit = { burst: 20, everyMs: 10_000 };
/** Distinct messages tracked; they are the code's own texts, so this is never reached in practice. */
const MAX_TRACKED = 1000;

/** One line for a person at a terminal: "12:00:00 info  listening port=8080". */
function pretty(time: number, level: Level, msg: string, fields: Record<string, unknown>): string {
  const rest = Object.entries(fields).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  return `${new Date(time).toISOString().slice(11, 19)} ${level.padEnd(5)} ${msg}${rest.length ? ` ${rest.join(" ")}` : ""}\n`;
}

/** JSON lines for machines (files, journald); `human` gives readable lines for a terminal. */
export function createLogger(
  min: Level,
  write: (line: string) => void,
  clock: () => number,
  human = false,
  limit: LogLimit = LOG_LIMIT,
): Logger {
  const buckets = new Map<string, { tokens: number; at: number; suppressed: number }>();

  /** Whether a line of `key` may be written now; the count of lines dropped before it, if any. */
  function admit(key: string, now: number): { ok: boolean; suppressed: number } {
    let b = buckets.get(key);
    if (!b) {
      if (buckets.size >= MAX_TRACKED) buckets.delete(buckets.keys().next().value!);
      buckets.set(key, (b = { tokens: limit.burst, at: now, suppressed: 0 }));
    }
    b.tokens = Math.min(limit.burst, b.tokens + Math.max(0, now - b.at) / limit.everyMs);
    b.at = now;
    if (b.tokens < 1) {
      b.suppressed++;
      return { ok: false, suppressed: 0 };
    }
    b.tokens -= 1;
    const suppressed = b.suppressed;
    b.suppressed = 0;
    return { ok: true, suppressed };
  }

  const at =
    (level: Level) =>
    (msg: string, fields: Record<string, unknown> = {}) => {
      if (ORDER[level] < ORDER[min]) return;
      const time = clock();
      const { ok, suppressed } = admit(`${level}|${msg}`, time);
      if (!ok) return;
      const all = suppressed > 0 ? { ...fields, suppressed } : fields;
      write(
        human
          ? pretty(time, level, msg, all)
          : `${JSON.stringify({ time: new Date(time).toISOString(), level, msg, ...all })}\n`,
      );
    };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}
