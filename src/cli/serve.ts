import { composeRoutes } from "../app.ts";
import { createLogger } from "../log.ts";
import { createRuntime } from "../runtime.ts";
import { UsageError, type Command } from "./command.ts";

export const serve: Command = {
  name: "serve",
  summary: "run the HTTP service (the default command)",
  async run({ config, version, out, workers }) {
    const clock = Date.now;
    const log = createLogger(config.logLevel, (line) => process.stderr.write(line), clock, process.stderr.isTTY === true);
    const runtime = await createRuntime(config, { clock, log, version, workers });
    const { app } = runtime;
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

    const jobs = runtime.startJobs();
    void composeRoutes(app);

    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info("shutting down", { signal });
      jobs.stop();
      await app.stop(); // stop accepting; in-flight requests finish
      await runtime.stop(); // everything acknowledged or queued is committed, then the database closed
      log.info("stopped");
      process.exit(0);
    };
    process.on("SIGTERM", () => void shutdown("SIGTERM"));
    process.on("SIGINT", () => void shutdown("SIGINT"));
    return -1;
  },
};
