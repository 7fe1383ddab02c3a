// Time charts, drawn by uPlot (about 50 KB, canvas, fast at many thousands of points).
import uPlot from "uplot";
import { h } from "./dom.ts";
import { tickLabels } from "./format.ts";

interface Series {
  label: string;
  /** A CSS custom property holding the colour, so charts follow the theme. */
  colorVar: string;
  values: (number | null)[];
}

export interface ChartOptions {
  /** Point times, ms since the epoch. */
  times: number[];
  series: Series[];
  /** Accessible description of what the chart shows. */
  title: string;
  height?: number;
  /** Formats y values in the legend. */
  format?: (v: number) => string;
  /** What the y axis counts: whole numbers (ticks 1 apart or more) or rates in [0, 1] shown as percentages. */
  unit: "count" | "percent";
  /** Called with the index of a clicked point. */
  onPick?: (index: number) => void;
  /** Removes the chart's observers when the view goes away. */
  onDispose: (fn: () => void) => void;
}

const cssVar = (name: string): string =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";

/** Tick steps of a count axis: whole numbers only (a 0.2 step would label 0, 0, 0, 1, 1). */
const COUNT_INCRS = [
  1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2500, 5e3, 1e4, 2e4, 25e3, 5e4, 1e5, 2e5, 25e4, 5e5, 1e6, 2e6,
  5e6, 1e7, 2e7, 5e7, 1e8, 2e8, 5e8, 1e9,
];

const DAY_S = 86_400;
/**
 * The time axis in UTC and 24-hour time, as every time on the page: [tick step, label, label when
 * the year / month / day / hour / minute changes, ..., mode] (uPlot's table format).
 */
const TIME_LABELS: uPlot.Axis.TimeValuesConfig = [
  [DAY_S * 365, "{YYYY}", null, null, null, null, null, null, 1],
  [DAY_S * 28, "{MMM}", "\n{YYYY}", null, null, null, null, null, 1],
  [DAY_S, "{MMM} {D}", "\n{YYYY}", null, null, null, null, null, 1],
  [3600, "{HH}:{mm}", "\n{YYYY}-{MM}-{DD}", null, "\n{MMM} {D}", null, null, null, 1],
  [60, "{HH}:{mm}", "\n{YYYY}-{MM}-{DD}", null, "\n{MMM} {D}", null, null, null, 1],
];
/** Instants as UTC (uPlot draws dates in the browser's zone unless told). */
const utc = (ts: number): Date => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC");

/** Common frame: a sized container that follows its width, axes in the theme's colours. */
function chart(
  o: ChartOptions,
  series: uPlot.Series[],
  data: uPlot.AlignedData,
  extra: Partial<uPlot.Options> = {},
): HTMLElement {
  const box = h("div", { class: "chart", role: "img", "aria-label": o.title });
  const axis = cssVar("--muted");
  const grid = cssVar("--grid");
  const plot = new uPlot(
    {
      width: 600,
      height: o.height ?? 220,
      tzDate: utc,
      series: [{ value: "{YYYY}-{MM}-{DD} {HH}:{mm} UTC" }, ...series],
      axes: [
        { stroke: axis, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, values: TIME_LABELS },
        {
          stroke: axis,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid },
          size: 56,
          ...(o.unit === "count" ? { incrs: COUNT_INCRS } : {}),
          values: (_u, vals, _axis, _space, step) => tickLabels(vals, step, o.unit),
        },
      ],
      cursor: { drag: { x: false, y: false } },
      legend: { live: true },
      ...extra,
    },
    data,
    box,
  );
  // Follows the container's width (set by the grid layout and the phone breakpoints).
  const observer = new ResizeObserver(([entry]) => {
    const width = Math.floor(entry?.contentRect.width ?? 0);
    if (width > 0 && width !== plot.width) plot.setSize({ width, height: o.height ?? 220 });
  });
  observer.observe(box);
  if (o.onPick) {
    const pick = o.onPick;
    plot.over.style.cursor = "pointer";
    plot.over.addEventListener("click", () => {
      const i = plot.cursor.idx;
      if (i !== null && i !== undefined) pick(i);
    });
  }
  o.onDispose(() => {
    observer.disconnect();
    plot.destroy();
  });
  return box;
}

/**
 * Stacked bars, first series at the bottom. Each series is drawn from zero to its cumulative
 * height, topmost first, so each lower one paints over the part that is its own; the legend
 * shows each series' own value.
 */
export function stackedBars(o: ChartOptions): HTMLElement {
  const n = o.times.length;
  const cumulative = o.series.map(() => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i++) {
    let sum = 0;
    o.series.forEach((s, k) => (cumulative[k]![i] = sum += s.values[i] ?? 0));
  }
  const fmt = o.format ?? ((v: number) => String(v));
  const order = o.series.map((_, k) => k).reverse();
  const bars = uPlot.paths.bars!({ size: [0.8, 40], gap: 1 });
  const series: uPlot.Series[] = order.map((k) => {
    const s = o.series[k]!;
    const color = cssVar(s.colorVar);
    return {
      label: s.label,
      fill: color,
      stroke: color,
      width: 0,
      paths: bars,
      points: { show: false },
      value: (_u, _v, _si, idx) => (idx === null ? "–" : fmt(s.values[idx] ?? 0)),
    };
  });
  const data: uPlot.AlignedData = [o.times.map((t) => t / 1000), ...order.map((k) => cumulative[k]!)];
  return chart(o, series, data, { scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.05)] } } });
}

/** Lines with gaps where a value is null (e.g. a rate with nothing to divide). */
export function lines(o: ChartOptions, yRange?: [number, number]): HTMLElement {
  const fmt = o.format ?? ((v: number) => String(v));
  const series: uPlot.Series[] = o.series.map((s) => ({
    label: s.label,
    stroke: cssVar(s.colorVar),
    width: 2,
    spanGaps: false,
    points: { show: o.times.length <= 60, size: 5 },
    value: (_u, v) => (v === null ? "–" : fmt(v)),
  }));
  const data: uPlot.AlignedData = [o.times.map((t) => t / 1000), ...o.series.map((s) => s.values)];
  return chart(o, series, data, yRange ? { scales: { y: { range: () => yRange } } } : {});
}
