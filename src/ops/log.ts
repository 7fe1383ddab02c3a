// Structured logging: one JSON object per line on stderr.
export type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(min: Level, write: (line: string) => void, clock: () => number): Logger {
  const at = (level: Level) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (ORDER[level] < ORDER[min]) return;
    write(`${JSON.stringify({ time: new Date(clock()).toISOString(), level, msg, ...fields })}\n`);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}
