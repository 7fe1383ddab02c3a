// Time units and hour alignment: every stored time is integer milliseconds since the epoch (UTC).
export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
export const WEEK = 7 * DAY;

export const floorHour = (t: number): number => Math.floor(t / HOUR) * HOUR;
export const ceilHour = (t: number): number => Math.ceil(t / HOUR) * HOUR;
