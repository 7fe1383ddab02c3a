// Number, time and label formatting: pure, shared by every view.

const int = new Intl.NumberFormat("en-US");

export const count = (n: number): string => int.format(n);

/** A rate in [0, 1] as a percentage with one decimal; "–" when there is none. */
export const percent = (rate: number | null, digits = 1): string =>
  rate === null ? "–" : `${(rate * 100).toFixed(digits)}%`;

/** Seconds as the two largest units: "42s", "3m 5s", "2h 10m", "3d 4h"; tenths below 10 s ("0.4s"). */
export function duration(seconds: number | null): string {
  if (seconds === null) return "–";
  if (seconds < 10) return `${Number(seconds.toFixed(1))}s`;
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

/** The UTC time of an instant, 24-hour "HH:MM:SS UTC": the one convention of the whole page. */
export const clockUtc = (t: Date): string => `${t.toISOString().slice(11, 19)} UTC`;

/** An ISO instant as "YYYY-MM-DD HH:MM:SS UTC". */
export const instantUtc = (iso: string): string => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;

/** Decimals that show a tick step exactly (0.025 -> 3, 25 -> 0), at most 4. */
function decimalsOf(step: number): number {
  for (let d = 0; d < 4; d++) {
    const scaled = step * 10 ** d;
    if (Math.abs(scaled - Math.round(scaled)) < 1e-9 * Math.max(1, scaled)) return d;
  }
  return 4;
}

/**
 * Axis labels for ticks `step` apart: as many decimals as the step needs and no more, so labels
 * are distinct and exact (2.5% steps read 0%, 2.5%, 5%, 7.5%, not 0%, 3%, 5%, 8%).
 */
export function tickLabels(values: number[], step: number, unit: "count" | "percent"): string[] {
  if (unit === "percent") {
    const d = decimalsOf(step * 100);
    return values.map((v) => `${(v * 100).toFixed(d)}%`);
  }
  const d = decimalsOf(step);
  return values.map((v) => (d === 0 ? int.format(Math.round(v)) : v.toFixed(d)));
}
