// A small Prometheus registry: counters, gauges and histograms rendered in the text format.
import type { BudgetStatus } from "../store/contract/maintenance.ts";
import type { StorageHealth } from "../store/engine.ts";

type Labels = Record<string, string>;

/** A series' identity in its metric's map: its labels in name order (computed for every report: no locale rules, no JSON). */
function key(labels: Labels): string {
  const names = Object.keys(labels);
  if (names.length > 1) names.sort();
  let k = "";
  // Length-prefixed values: no value, whatever it holds, can run into the next label.
  for (const name of names) k += `${name}=${labels[name]!.length}:${labels[name]}`;
  return k;
}
const escape = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
const labelText = (labels: Labels) => {
  const parts = Object.entries(labels)
    .sort(([a], [b]) => (a === "le" ? 1 : b === "le" ? -1 : a.localeCompare(b)))
    .map(([k, v]) => `${k}="${escape(v)}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
};

interface Metric {
  render(): string | Promise<string>;
}

/** One labelled series of a counter; the ingestion routes keep theirs, so a report names no labels. */
export class CounterSeries {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(by = 1): void {
    this.value += by;
  }
}

class Counter implements Metric {
  private byKey = new Map<string, CounterSeries>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  /** The series of `labels`, made on first use (a series renders once made: make it when it counts). */
  series(labels: Labels = {}): CounterSeries {
    const k = key(labels);
    let s = this.byKey.get(k);
    if (!s) this.byKey.set(k, (s = new CounterSeries(labels)));
    return s;
  }
  inc(labels: Labels = {}, by = 1): void {
    this.series(labels).inc(by);
  }
  get(labels: Labels = {}): number {
    return this.byKey.get(key(labels))?.value ?? 0;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { labels, value } of this.byKey.values()) lines.push(`${this.name}${labelText(labels)} ${value}`);
    return lines.join("\n");
  }
}

type GaugeValues = { labels?: Labels; value: number }[];

/** A gauge read when scraped (from storage too, hence asynchronously). */
export class Gauge implements Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    private read: () => GaugeValues | Promise<GaugeValues>,
    private readonly type: "gauge" | "counter" = "gauge",
  ) {}
  async render(): Promise<string> {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const { labels = {}, value } of await this.read()) lines.push(`${this.name}${labelText(labels)} ${value}`);
    return lines.join("\n");
  }
}

/** One labelled series of a histogram (see CounterSeries). */
export class HistogramSeries {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(
    readonly labels: Labels,
    private readonly buckets: readonly number[],
  ) {
    this.counts = buckets.map(() => 0);
  }
  observe(value: number): void {
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

class Histogram implements Metric {
  private byKey = new Map<string, HistogramSeries>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
  ) {}
  /** The series of `labels`, made on first use. */
  series(labels: Labels = {}): HistogramSeries {
    const k = key(labels);
    let s = this.byKey.get(k);
    if (!s) this.byKey.set(k, (s = new HistogramSeries(labels, this.buckets)));
    return s;
  }
  observe(value: number, labels: Labels = {}): void {
    this.series(labels).observe(value);
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const s of this.byKey.values()) {
      this.buckets.forEach((le, i) =>
        lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: String(le) })} ${s.counts[i]}`),
      );
      lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: "+Inf" })} ${s.count}`);
      lines.push(`${this.name}_sum${labelText(s.labels)} ${s.sum}`);
      lines.push(`${this.name}_count${labelText(s.labels)} ${s.count}`);
    }
    return lines.join("\n");
  }
}

class Registry {
  private metrics: Metric[] = [];
  add<M extends Metric>(m: M): M {
    this.metrics.push(m);
    return m;
  }
  async render(): Promise<string> {
    return `${(await Promise.all(this.metrics.map((m) => m.render()))).join("\n")}\n`;
  }
}

/**
 * Storage's health and budgets (store/engine.ts StorageHealth), read once per scrape: whether it
 * takes writes, problems known, and the rejected-reports log and held reports against their
 * budgets, with what was done to stay within them (counters kept in the database, so they
 * survive restarts). Registered by the composition root, which has the engine.
 */
export function registerStorageMetrics(registry: Registry, health: () => Promise<StorageHealth>): void {
  let pending: Promise<StorageHealth> | null = null;
  // Every gauge of one scrape shares one reading.
  const read = () => (pending ??= health().finally(() => queueMicrotask(() => (pending = null))));
  const add: AddGauge = (name, help, values, type = "gauge") => registry.add(new Gauge(name, help, values, type));
  addHealthGauges(add, read);
  addBudgetGauges(add, async (pick, none) => {
    const b = (await read()).budgets;
    return b ? pick(b) : none;
  });
}

type AddGauge = (name: string, help: string, values: () => Promise<GaugeValues>, type?: "gauge" | "counter") => void;
/** A budget's values from the scrape's reading; `none` without budgets. */
type BudgetValues = (pick: (b: BudgetStatus) => GaugeValues, none: GaugeValues) => Promise<GaugeValues>;

/** Whether storage takes writes, its problems, its integrity check, and the replica's lag. */
function addHealthGauges(add: AddGauge, read: () => Promise<StorageHealth>): void {
  add(
    "installstats_storage_writable",
    "1 while storage takes writes; 0 once its files were replaced or removed under the server",
    async () => [{ value: (await read()).writable ? 1 : 0 }],
  );
  add(
    "installstats_storage_problems",
    "Problems known with storage (files replaced or removed, damage met, damage found by the integrity check)",
    async () => [{ value: (await read()).problems.length }],
  );
  add(
    "installstats_storage_integrity_ok",
    "1 when SQLite's quick_check at start found nothing, 0 when it found damage; absent until it ran",
    async () => {
      const i = (await read()).integrity;
      return i ? [{ value: i.ok ? 1 : 0 }] : [];
    },
  );
  add(
    "installstats_replica_lag_seconds",
    "Replay lag of the read replica (--read-db); absent without one, or while it does not answer",
    async () => {
      const lag = (await read()).database.replica?.lagS;
      return lag === undefined || lag === null ? [] : [{ value: lag }];
    },
  );
  add(
    "installstats_reads_from_replica",
    "1 while reads go to the replica (--read-db), 0 while they go to the primary; absent without a replica",
    async () => {
      const replica = (await read()).database.replica;
      return replica ? [{ value: replica.readsFrom === "replica" ? 1 : 0 }] : [];
    },
  );
}

/** The rejected-reports log and held reports against their budgets, and what was done to stay within them. */
function addBudgetGauges(add: AddGauge, budget: BudgetValues): void {
  add("installstats_log_budget_bytes", "Budget of the rejected-reports log (--log-budget)", () =>
    budget((b) => [{ value: b.log.limitBytes }], []),
  );
  add(
    "installstats_log_bytes",
    "Bytes the rejected-reports log uses: bodies (compressed, each stored once) and entries",
    () => budget((b) => [{ value: b.log.usedBytes }], []),
  );
  add(
    "installstats_log_body_bytes",
    "Whole bodies in the rejected-reports log, as stored (compressed) and as received",
    () =>
      budget(
        (b) => [
          { labels: { form: "stored" }, value: b.log.bodyBytes },
          { labels: { form: "raw" }, value: b.log.bodyRawBytes },
        ],
        [],
      ),
  );
  add("installstats_log_entries", "Entries of the rejected-reports log, by what they keep of their body", () =>
    budget(
      (b) => [
        { labels: { body: "whole" }, value: b.log.entries - b.log.headOnly },
        { labels: { body: "head_only" }, value: b.log.headOnly },
      ],
      [],
    ),
  );
  add(
    "installstats_log_budget_actions_total",
    "What the log's budget did to entries: deduplicated (shared a stored body), truncated (head only), evicted (oldest head-only removed), dropped (not kept, counted only)",
    () =>
      budget(
        (b) => [
          { labels: { action: "deduplicated" }, value: b.log.deduplicated },
          { labels: { action: "truncated" }, value: b.log.truncated },
          { labels: { action: "evicted" }, value: b.log.evicted },
          { labels: { action: "dropped" }, value: b.log.dropped },
        ],
        [],
      ),
    "counter",
  );
  add(
    "installstats_log_dropped_bytes_total",
    "Body bytes the rejected-reports log did not keep (past its budget)",
    () => budget((b) => [{ value: b.log.droppedBytes }], []),
    "counter",
  );
  add("installstats_held_budget_bytes", "Budget of held reports (--held-budget)", () =>
    budget((b) => [{ value: b.held.limitBytes }], []),
  );
  add("installstats_held_bytes", "Bytes held reports use", () => budget((b) => [{ value: b.held.usedBytes }], []));
  add("installstats_held_reports", "Final reports held, waiting for their start report", () =>
    budget((b) => [{ value: b.held.count }], []),
  );
  add(
    "installstats_held_applied_total",
    "Held reports applied on their own, by reason: expired (waited --held-expiry), over_budget (oldest first, past --held-budget)",
    () =>
      budget(
        (b) => [
          { labels: { reason: "expired" }, value: b.held.expired },
          { labels: { reason: "over_budget" }, value: b.held.overflowed },
        ],
        [],
      ),
    "counter",
  );
}

/** The service's own metrics; gauges that need the database are added by whoever has it. */
export function createMetrics() {
  const registry = new Registry();
  return {
    registry,
    requests: registry.add(
      new Counter("installstats_http_requests_total", "HTTP requests by route, method and status"),
    ),
    ingestSeconds: registry.add(
      new Histogram(
        "installstats_ingest_duration_seconds",
        "Time from a report's arrival to its answer (commit included)",
        [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      ),
    ),
    batchSize: registry.add(
      new Histogram(
        "installstats_write_batch_size",
        "Writes per committed transaction",
        [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      ),
    ),
    commitSeconds: registry.add(
      new Histogram(
        "installstats_write_commit_seconds",
        "Time to write and commit one batch (a hold for a WAL restart before it included)",
        [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      ),
    ),
    walRestartHoldSeconds: registry.add(
      new Histogram(
        "installstats_wal_restart_hold_seconds",
        "Time the writer held its batches so the WAL could start over",
        [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      ),
    ),
    rejected: registry.add(
      new Counter(
        "installstats_rejected_reports_total",
        "Reports not applied as sent, by reason (kept in the rejected-reports log)",
      ),
    ),
    unknownPathPosts: registry.add(
      new Counter(
        "installstats_unknown_path_posts_total",
        "POSTs to paths the service does not know (a script pointed at a wrong URL), by path; answered 404",
      ),
    ),
    rateLimited: registry.add(
      new Counter(
        "installstats_rate_limited_total",
        "Ingestion requests answered 429, by the client's address family (ipv4, ipv6)",
      ),
    ),
    clientShareUsed: registry.add(
      new Counter(
        "installstats_client_share_used_total",
        "Reports of a client network past its share: share=log, bodies logged by their head; share=held, final reports applied on their own instead of held",
      ),
    ),
    jobRuns: registry.add(new Counter("installstats_job_runs_total", "Scheduled job runs by job and result")),
    alertDeliveries: registry.add(
      new Counter(
        "installstats_alert_deliveries_total",
        "Attempts to deliver alert messages, by channel and result: sent, retry (failed, tried again later), failed (given up)",
      ),
    ),
    relayRequestSeconds: registry.add(
      new Histogram(
        "installstats_relay_request_duration_seconds",
        "Requests of this node's relay to the upstream, by result (sent, refused, failed; a timeout is a failure)",
        [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      ),
    ),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
