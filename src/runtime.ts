// The one composition root: config -> engine -> writer -> maintenance -> app. `serve`, the test
// helpers and the scripts all build the service here, so it is wired the same way everywhere.
import { createApp } from "./app.ts";
import { trackerOf, type Config } from "./config.ts";
import { OUTCOMES } from "./domain/outcome.ts";
import { Gauge, createMetrics, registerStorageMetrics } from "./http/metrics.ts";
import type { Logger } from "./log.ts";
import { startJobs, type JobRunner } from "./maintenance/jobs.ts";
import { createMaintenance } from "./maintenance/service.ts";
import { scheduledJobs } from "./maintenance/schedule.ts";
import { allTime } from "./read/query.ts";
import { createStats } from "./read/stats.ts";
import type { Engine, Serving, Workers } from "./store/engine.ts";
import { createWriter } from "./store/writer.ts";
import { createAlerts } from "./alerts/service.ts";
import type { AlertsConfig } from "./alerts/rules.ts";
import { createRelay } from "./relay/service.ts";
import { createIssues } from "./issues/service.ts";
import { createTracker } from "./issues/tracker.ts";

export interface RuntimeEnv {
  clock: () => number;
  log: Logger;
  version: string;
  /**
   * Worker entry points, resolved by the entry module: given, the engine serves with its
   * background work (SQLite: the checkpoint thread); omitted, writes run in this thread alone.
   */
  workers?: Workers;
  /** The alerts file, parsed and checked (src/alerts/rules.ts loadAlerts); absent: no alerts. */
  alerts?: AlertsConfig;
}

type Registry = ReturnType<typeof createMetrics>["registry"];

/** The database's size, installs by outcome, uptime and memory. */
function registerServiceGauges(registry: Registry, engine: Engine, clock: () => number): void {
  const { store } = engine;
  const stats = createStats(store);
  const started = clock();
  registry.add(
    new Gauge("installstats_database_bytes", "Size of the database file and its WAL", async () =>
      (await engine.sizes()).map(({ file, bytes }) => ({ labels: { file }, value: bytes })),
    ),
  );
  registry.add(
    new Gauge("installstats_installs", "Installs stored, by outcome (all time, from rollups)", async () => {
      const span = await store.recordSpan();
      if (!span) return [];
      const s = await stats.summary({}, allTime(span, clock()));
      return OUTCOMES.map((outcome) => ({ labels: { outcome }, value: s[outcome] }));
    }),
  );
  registry.add(
    new Gauge("installstats_uptime_seconds", "Seconds since the service started", () => [
      { value: Math.round((clock() - started) / 1000) },
    ]),
  );
  registry.add(
    new Gauge("installstats_resident_memory_bytes", "Resident set size of the process", () => [
      { value: process.memoryUsage.rss() },
    ]),
  );
}

/** The alert queue by channel and the alerts firing by rule. */
function registerAlertGauges(registry: Registry, store: Engine["store"], config: AlertsConfig): void {
  const channels = config.channels.map((c) => c.name);
  registry.add(
    new Gauge(
      "installstats_alert_queue",
      "Alert messages waiting to be delivered (new, or failed and to be retried), by channel",
      async () => {
        const pending = new Map((await store.alertQueue()).map((q) => [q.channel, q.pending]));
        return [...new Set([...channels, ...pending.keys()])].map((channel) => ({
          labels: { channel },
          value: pending.get(channel) ?? 0,
        }));
      },
    ),
  );
  registry.add(
    new Gauge(
      "installstats_alerts_firing",
      "Alerts firing now, by rule (a rule about each app counts each app)",
      async () => {
        const states = await store.alertStates();
        return config.rules.map((r) => ({
          labels: { rule: r.id },
          value: states.filter((s) => s.rule === r.id && s.status === "firing").length,
        }));
      },
    ),
  );
}

/**
 * `engine` is opened by the caller (serve, after the location check and the serve lock; tests,
 * to look underneath); the runtime owns it from here on and closes it in `stop`.
 */
export async function createRuntime(config: Config, env: RuntimeEnv, engine: Engine) {
  const { clock, log, version } = env;
  // A tracker configured by halves stops the start before anything runs (one line, with the fix).
  const trackerSettings = trackerOf(config);
  const { store } = engine;
  const metrics = createMetrics();
  const serving: Serving = env.workers
    ? engine.serve({
        log,
        workers: env.workers,
        readBudgetMs: config.readBudgetMs,
        onHold: (seconds) => metrics.walRestartHoldSeconds.observe(seconds),
      })
    : { commit: (ops) => store.write(ops), stop: async () => {} };
  const writer = createWriter(serving.commit, config.maxBatch, (size, seconds) => {
    metrics.batchSize.observe(size);
    metrics.commitSeconds.observe(seconds);
  });
  const maintenance = createMaintenance({ config, store, writer, clock });
  const relay = createRelay({ config, store, submit: (op) => writer.submit(op), clock, log, version, metrics });

  const { registry } = metrics;
  registerServiceGauges(registry, engine, clock);
  registerStorageMetrics(registry, () => engine.health());

  // Links in alert messages: the public URL, else the address serve listens on (known once it listens).
  let listenUrl = `http://localhost:${config.port}`;
  const alerts = env.alerts
    ? createAlerts({
        config: env.alerts,
        store,
        writer,
        clock,
        log,
        deliveries: metrics.alertDeliveries,
        baseUrl: () => config.publicUrl ?? listenUrl,
      })
    : null;
  if (alerts) registerAlertGauges(registry, store, env.alerts!);

  const tracker = trackerSettings === null ? null : createTracker(trackerSettings, { version });
  tracker?.checkToken();
  const issues = createIssues({
    store,
    submit: (op) => writer.submit(op),
    clock,
    log,
    tracker,
    labels: config.trackerLabels,
    dashboardUrl: () => config.publicUrl ?? listenUrl,
  });

  const app = createApp({
    config,
    store,
    writer,
    clock,
    version,
    log,
    metrics,
    maintenance,
    storageHealth: () => engine.health(),
    alerts,
    relay,
    issues,
  });

  return {
    config,
    engine,
    store,
    writer,
    metrics,
    maintenance,
    relay,
    issues,
    app,
    alerts,
    /** Where serve listens, once it does: the base of links in alert messages unless --public-url is set. */
    listening(url: string): void {
      listenUrl = url;
    },
    /** The scheduled jobs of `serve` (fold, stuck installs, retention, backups, alerts), and the relay's sender. */
    startJobs: (): JobRunner => {
      relay.start();
      return startJobs([...scheduledJobs({ config, store, writer, clock, maintenance }), ...(alerts?.jobs() ?? [])], {
        log,
        metrics,
        clock,
        lease: (name, everyMs, at, fn) => store.leaseJob(name, everyMs, at, fn),
      });
    },
    /** Stops the relay's sender, commits everything queued, ends the engine's background work and closes it. */
    async stop(): Promise<void> {
      await relay.stop();
      await writer.drain();
      await serving.stop();
      await engine.close();
    },
  };
}
