// Structured logging: one JSON object per line on stderr, or readable lines on a terminal.
export type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** One line for a person at a terminal: "12:00:00 info  listening port=8080". */
function pretty(time: number, level: Level, msg: string, fields: Record<string, unknown>): string {
  const rest = Object.entries(fields).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  return `${new Date(time).toISOString().slice(11, 19)} ${level.padEnd(5)} ${msg}${rest.length ? ` ${rest.join(" ")}` : ""}\n`;
}

/** JSON lines for machines (files, journald); `human` gives readable lines for a terminal. */
export function createLogger(min: Level, write: (line: string) => void, clock: () => number, human = false): Logger {
  const at = (level: Level) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (ORDER[level] < ORDER[min]) return;
    const time = clock();
    write(human ? pretty(time, level, msg, fields) : `${JSON.stringify({ time: new Date(time).toISOString(), level, msg, ...fields })}\n`);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}
