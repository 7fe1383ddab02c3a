import { composeRoutes, createApp } from "../app.ts";
import { createWriter, inProcessCommit } from "../store/writer.ts";
import { createSqliteStore } from "../store/sqlite/store.ts";
import { createLogger } from "../log.ts";
import { createMetrics } from "../http/metrics.ts";
import { startJobs } from "../maintenance/jobs.ts";
import { scheduledJobs } from "../maintenance/schedule.ts";
import { createMaintenance } from "../maintenance/maintenance.ts";
import { openDatabase } from "../store/sqlite/database.ts";
import { startCheckpointThread } from "../store/sqlite/checkpoint-thread.ts";
import { UsageError, type Command } from "./command.ts";

export const serve: Command = {
  name: "serve",
  summary: "run the HTTP service (the default command)",
  async run({ config, version, out, workers }) {
    const clock = Date.now;
    const log = createLogger(config.logLevel, (line) => process.stderr.write(line), clock, process.stderr.isTTY === true);
    const { sqlite, db } = openDatabase(config.db, { durability: config.durability, migrate: true });
    const metrics = createMetrics();
    const checkpoints = startCheckpointThread(workers.checkpointer, sqlite, config.db, log, {
      onHold: (seconds) => metrics.walRestartHoldSeconds.observe(seconds),
    });
    const store = createSqliteStore(sqlite, db);
    const commit = inProcessCommit((ops) => {
      checkpoints.beforeWrite();
      return store.write(ops);
    });
    const writer = createWriter(commit, config.maxBatch, (size, seconds) => {
      metrics.batchSize.observe(size);
      metrics.commitSeconds.observe(seconds);
    });
    const maintenance = createMaintenance({ config, reads: store, db, writer, clock });
    const app = createApp({ config, store, writer, clock, version, log, metrics, maintenance });
    try {
      app.listen({ hostname: config.host, port: config.port });
    } catch (e) {
      if ((e as { code?: unknown }).code !== "EADDRINUSE") throw e;
      throw new UsageError(`cannot listen on ${config.host}:${config.port}: the port is in use (another installstats server?); choose one with --port`);
    }
    const port = app.server?.port;
    // The one line on stdout: scripts and tests read the address from it.
    out(`installstats ${version} listening on http://${config.host}:${port}\n`);
    log.info("listening", { host: config.host, port, db: config.db, durability: config.durability });

    const jobs = startJobs(scheduledJobs({ config, store, writer, clock, maintenance }), { log, metrics });
    void composeRoutes(app);

    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info("shutting down", { signal });
      jobs.stop();
      await app.stop(); // stop accepting; in-flight requests finish
      await writer.drain(); // everything acknowledged or queued is committed
      checkpoints.stop();
      store.close();
      log.info("stopped");
      process.exit(0);
    };
    process.on("SIGTERM", () => void shutdown("SIGTERM"));
    process.on("SIGINT", () => void shutdown("SIGINT"));
    return -1;
  },
};
