// Time units and hour alignment: every stored time is integer milliseconds since the epoch (UTC).
export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
export const WEEK = 7 * DAY;

export const floorHour = (t: number): number => Math.floor(t / HOUR) * HOUR;
export const ceilHour = (t: number): number => Math.ceil(t / HOUR) * HOUR;

/**
 * ISO strings of times in order, as Date#toISOString writes them: whole hours of one day share its
 * date, made once (a Date and its string per point were ~17 % of an hourly series' CPU).
 */
export function isoTimes(ts: readonly number[]): string[] {
  let day = Number.NaN;
  let date = "";
  return ts.map((t) => {
    if (t % HOUR !== 0 || t < 0) return new Date(t).toISOString();
    const d = t - (t % DAY);
    if (d !== day) {
      day = d;
      date = new Date(d).toISOString().slice(0, 11);
    }
    const h = (t - d) / HOUR;
    return `${date}${h < 10 ? "0" : ""}${h}:00:00.000Z`;
  });
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:?\d{2})?$/;

/** Calendar date and clock time as epoch ms read as UTC, the offset it names (ms; null: none), or null when no such time. */
function dateTime(text: string): { wall: number; offset: number | null } | null {
  const m = DATE_TIME.exec(text.trim());
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (year < 1970 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) return null;
  const date = Date.UTC(year, month - 1, day);
  if (new Date(date).getUTCDate() !== day) return null; // 2026-02-30
  const ms = m[7] ? Number(m[7].padEnd(3, "0").slice(0, 3)) : 0;
  const zone = m[8];
  const offset =
    zone === undefined
      ? null
      : zone === "Z" || zone === "z"
        ? 0
        : (zone[0] === "-" ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(-2))) * 60_000;
  return { wall: date + ((hour * 60 + minute) * 60 + second) * 1000 + ms, offset };
}

/**
 * An RFC 3339 time as epoch ms: our ISO strings and Go's time.Time JSON (nanoseconds, any zone
 * offset) alike; the fraction is cut to milliseconds. null when it is not one (or before 1970).
 */
export function parseTimestamp(value: unknown): number | null {
  if (typeof value !== "string") return null;
  const t = dateTime(value);
  return t === null || t.offset === null ? null : t.wall - t.offset;
}

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** Whether `zone` is a time zone this runtime knows ("UTC", "Europe/Berlin"). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** How far `zone`'s clocks are ahead of UTC at the instant `t` (ms). */
function zoneOffset(zone: string, t: number): number {
  let format = zoneFormats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    zoneFormats.set(zone, format);
  }
  const part = Object.fromEntries(format.formatToParts(new Date(t)).map((p) => [p.type, Number(p.value)]));
  return (
    Date.UTC(part.year!, part.month! - 1, part.day!, part.hour!, part.minute!, part.second!) -
    (t - (((t % 1000) + 1000) % 1000))
  );
}

/**
 * A date and time as a database prints it: with a zone offset (ISO 8601) that instant, without
 * one ("2026-05-01 12:00:00.123", ClickHouse's default) the wall time in `zone`. In the hour a
 * clock is put back the earlier instant is taken. null when it is no such time.
 */
export function parseZonedTime(value: string, zone: string): number | null {
  const t = dateTime(value);
  if (t === null) return null;
  if (t.offset !== null) return t.wall - t.offset;
  if (zone === "UTC") return t.wall;
  // The offsets a day either side cover any clock change; of the instants that show this wall
  // time the earliest is taken (none in the hour a clock skips: read with the offset before it).
  const before = zoneOffset(zone, t.wall - DAY);
  const after = zoneOffset(zone, t.wall + DAY);
  const fits = [before, after]
    .map((offset) => t.wall - offset)
    .filter((instant) => instant + zoneOffset(zone, instant) === t.wall);
  return fits.length > 0 ? Math.min(...fits) : t.wall - before;
}
