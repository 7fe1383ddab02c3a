// Number, time and label formatting: pure, shared by every view.

const int = new Intl.NumberFormat("en-US");

export const count = (n: number): string => int.format(n);

/** A rate in [0, 1] as a percentage with one decimal; "–" when there is none. */
export const percent = (rate: number | null, digits = 1): string => (rate === null ? "–" : `${(rate * 100).toFixed(digits)}%`);

/** Seconds as the two largest units: "42s", "3m 5s", "2h 10m", "3d 4h". */
export function duration(seconds: number | null): string {
  if (seconds === null) return "–";
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}

/** An ISO instant as "YYYY-MM-DD HH:MM" in UTC (the API's zone, so numbers match across users). */
export const dateTime = (iso: string): string => `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;

/** A missing group value, shown as such rather than as a blank. */
export const label = (value: string | null): string => (value === null || value === "" ? "(none)" : value);

/** YYYY-MM-DD of an instant in UTC. */
export const isoDate = (t: number): string => new Date(t).toISOString().slice(0, 10);

/** The time of day of an ISO instant, "HH:MM:SS" in UTC. */
export const timeOfDay = (iso: string): string => iso.slice(11, 19);
