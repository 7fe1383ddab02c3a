// Failure drivers: the dimension values (host version, OS, kernel, hardware, ...) whose runs fail
// more often than the other runs of the same window, with an interval wide enough that a handful
// of runs cannot make a value look like a cause. Pure: counts in, ranked drivers out.
//
// The statistic (docs/decisions/2026-11-27-failure-drivers-statistic.md): every value with enough
// runs is compared with every other run of the window. It is listed when Fisher's exact test
// (one-sided: its runs fail more) holds at 5% after a Bonferroni adjustment over all the values
// compared: exact, so a handful of runs cannot pass it by luck, and with hundreds of kernel
// versions chance alone still leaves the list empty 95% of the time. How much more it fails is
// the difference of the two failure rates with Newcombe's hybrid score interval (one Wilson
// interval per side) at the same adjusted confidence; the strongest driver is the one with the
// largest lower bound: the excess failure rate the data still support.
import type { Dimension } from "./rollup.ts";

/**
 * Dimensions compared. Left out: what describes the outcome itself (status, exit code, error
 * category, failed command: every failure has one, every success none), and the app (the
 * failure ranking of apps answers that). app_version only within one app: versions of
 * different apps share numbers, not meaning.
 */
const COMPARED: readonly Dimension[] = [
  "pve_version",
  "kernel_version",
  "os",
  "arch",
  "cpu_vendor",
  "gpu_vendor",
  "gpu_passthrough",
  "host_gpu",
  "core_count",
  "ram_size",
  "type",
  "ct_type",
  "method",
  "platform",
  "repo_source",
  "repo_slug",
  "attempt",
];
export const driverDimensions = (oneApp: boolean): readonly Dimension[] =>
  oneApp ? [...COMPARED, "app_version"] : COMPARED;

/** Finished runs: success + failed. Blocked (by the host, before the script ran), aborted (a user's decline), unknown (timed out) and running ones are neither. */
export interface RunCounts {
  failed: number;
  runs: number;
}

/** The family error rate of the test: 5% that any listed driver is there by chance alone. */
const ALPHA = 0.05;
/** The family confidence of the intervals. */
export const CONFIDENCE = 1 - ALPHA;

/**
 * The standard normal quantile (Acklam's rational approximation, relative error below 1.2e-9):
 * the z of a confidence level, with no table to ship.
 */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile needs 0 < p < 1, got ${p}`);
  const a = [
    -3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1,
    2.506628277459239,
  ];
  const b = [
    -5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1,
  ];
  const c = [
    -7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const tail = (q: number) =>
    (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) /
    ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1);
  if (p < 0.02425) return tail(Math.sqrt(-2 * Math.log(p)));
  if (p > 1 - 0.02425) return -tail(Math.sqrt(-2 * Math.log(1 - p)));
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) /
    (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1)
  );
}

/** z of a two-sided interval at confidence 1 - `alpha`, Bonferroni-adjusted for `comparisons` intervals. */
export const zFor = (alpha: number, comparisons: number): number =>
  normalQuantile(1 - alpha / (2 * Math.max(1, comparisons)));

/** Wilson's score interval of k successes in n trials; [0, 1] when n is 0. */
export function wilson(k: number, n: number, z: number): [number, number] {
  if (n === 0) return [0, 1];
  const p = k / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denom;
  const half = (z / denom) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // Exact at the edges (0 of n has 0 as its lower bound), whatever the rounding.
  return [k === 0 ? 0 : Math.max(0, centre - half), k === n ? 1 : Math.min(1, centre + half)];
}

/** ln Γ(x) for x > 0 (Lanczos, g = 7: about 15 significant digits). */
function logGamma(x: number): number {
  const g = [
    0.9999999999998099, 676.5203681218851, -1259.1392167224028, 771.3234287776531, -176.6150291621406,
    12.507343278686905, -0.13857109526572012, 9.984369578019572e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const y = x - 1;
  let sum = g[0]!;
  for (let i = 1; i < 9; i++) sum += g[i]! / (y + i);
  const t = y + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(sum);
}
const logChoose = (n: number, k: number): number => logGamma(n + 1) - logGamma(k + 1) - logGamma(n - k + 1);

/**
 * Fisher's exact test, one-sided: the chance that `n` runs drawn from `total.runs`, of which
 * `total.failed` failed, hold `a` failures or more (the hypergeometric upper tail).
 */
export function fisherGreater(a: number, n: number, total: RunCounts): number {
  const N = total.runs;
  const K = total.failed;
  const top = Math.min(n, K);
  if (a <= Math.max(0, n + K - N)) return 1;
  if (a > top) return 0;
  // The first term, then each from the one before: t(x+1) / t(x) = (K-x)(n-x) / ((x+1)(N-K-n+x+1)).
  let term = Math.exp(logChoose(K, a) + logChoose(N - K, n - a) - logChoose(N, n));
  let sum = term;
  for (let x = a; x < top; x++) {
    term *= ((K - x) * (n - x)) / ((x + 1) * (N - K - n + x + 1));
    sum += term;
    if (term <= sum * 1e-17) break; // the tail's terms only shrink from here (or underflowed to 0)
  }
  return Math.min(1, sum);
}

/** Newcombe's hybrid score interval (his method 10) of p1 - p0, from the two Wilson intervals. */
export function newcombe(a: RunCounts, b: RunCounts, z: number): [number, number] {
  const p1 = a.failed / a.runs;
  const p0 = b.failed / b.runs;
  const [l1, u1] = wilson(a.failed, a.runs, z);
  const [l0, u0] = wilson(b.failed, b.runs, z);
  const d = p1 - p0;
  return [d - Math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2), d + Math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)];
}

export interface Driver {
  dimension: Dimension;
  value: string;
  /** The value's finished runs and their failures. */
  failed: number;
  runs: number;
  failureRate: number;
  /** Wilson interval of failureRate, at the adjusted confidence. */
  failureRateInterval: [number, number];
  /** Every other finished run of the window (the rest of the dimension, "not reported" included). */
  elsewhere: RunCounts & { failureRate: number };
  /** The value's share of the window's failures and of its runs: "80% of failures, 25% of runs". */
  shareOfFailed: number;
  shareOfRuns: number;
  /** failureRate / the window's failure rate (= shareOfFailed / shareOfRuns). */
  lift: number;
  /** failureRate - elsewhere.failureRate, with its interval (drivers are sorted by its lower bound). */
  difference: number;
  differenceInterval: [number, number];
  /** Fisher's exact test, one-sided; below ALPHA / compared for every driver. */
  pValue: number;
}

export interface DriverAnswer {
  failed: number;
  runs: number;
  /** Values with enough runs on both sides: the comparisons the confidence is adjusted for. */
  compared: number;
  /** The z every interval was computed with. */
  z: number;
  /** The p-value a driver is below: 0.05 / compared. */
  alpha: number;
  drivers: Driver[];
}

/**
 * Ranks the over-represented values. `values` holds, per dimension, each value's finished runs;
 * `total` every finished run of the window. A value is compared when it has at least `minRuns`
 * runs and the rest of the window has some; "" (not reported) is never a driver, being the
 * absence of a property rather than one.
 */
export function rankDrivers(
  total: RunCounts,
  values: ReadonlyMap<Dimension, ReadonlyMap<string, RunCounts>>,
  minRuns: number,
): DriverAnswer {
  const candidates: { dimension: Dimension; value: string; c: RunCounts }[] = [];
  for (const [dimension, byValue] of values) {
    for (const [value, c] of byValue) {
      if (value === "" || c.runs < Math.max(1, minRuns) || c.runs >= total.runs) continue;
      candidates.push({ dimension, value, c });
    }
  }
  const z = zFor(ALPHA, candidates.length);
  const alpha = ALPHA / Math.max(1, candidates.length);
  const overall = total.runs === 0 ? 0 : total.failed / total.runs;
  const drivers: Driver[] = [];
  for (const { dimension, value, c } of candidates) {
    const rest = { failed: total.failed - c.failed, runs: total.runs - c.runs };
    // Only a value failing more than the rest can be a driver; the test is skipped for the others.
    if (c.failed * rest.runs <= rest.failed * c.runs) continue;
    const pValue = fisherGreater(c.failed, c.runs, total);
    if (!(pValue < alpha)) continue;
    const [low, high] = newcombe(c, rest, z);
    const failureRate = c.failed / c.runs;
    drivers.push({
      dimension,
      value,
      failed: c.failed,
      runs: c.runs,
      failureRate,
      failureRateInterval: wilson(c.failed, c.runs, z),
      elsewhere: { ...rest, failureRate: rest.failed / rest.runs },
      shareOfFailed: c.failed / total.failed,
      shareOfRuns: c.runs / total.runs,
      lift: failureRate / overall,
      difference: failureRate - rest.failed / rest.runs,
      differenceInterval: [low, high],
      pValue,
    });
  }
  drivers.sort(
    (x, y) =>
      y.differenceInterval[0] - x.differenceInterval[0] ||
      y.failed - x.failed ||
      (x.dimension < y.dimension ? -1 : x.dimension > y.dimension ? 1 : x.value < y.value ? -1 : 1),
  );
  return { failed: total.failed, runs: total.runs, compared: candidates.length, z, alpha, drivers };
}
