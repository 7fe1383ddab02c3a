import { checkLocation, createdBy, displayLocation, lockForServing } from "../store/open.ts";
import { SETTINGS } from "../config.ts";
import { createLogger } from "../log.ts";
import { createRuntime } from "../runtime.ts";
import { linkBase, startupLines } from "./addresses.ts";
import { loadAlerts } from "../alerts/rules.ts";
import { openDatabaseOf, type Command } from "./command.ts";
import { CliError, EXIT } from "./errors.ts";
import { PURGE_DELAY, serveEnvironment } from "./allocator.ts";
import { locate } from "../store/location.ts";

/** One line for a failed listen: the cause and the fix, by the error's code. */
export function listenFailure(code: string | undefined, host: string, port: number, user: { root: boolean }): string {
  const where = `cannot listen on ${host.includes(":") ? `[${host}]` : host}:${port}`;
  switch (code) {
    case "EADDRINUSE":
      return `${where}: the port is in use (another installstats server?); choose another with --port, or stop what holds it (ss -ltnp 'sport = :${port}' shows it)`;
    case "EACCES":
    case "EPERM":
      return port > 0 && port < 1024 && !user.root
        ? `${where}: ports below 1024 need root or the CAP_NET_BIND_SERVICE capability; use --port 8080 (behind a reverse proxy for port 80), or grant the capability (systemd: AmbientCapabilities=CAP_NET_BIND_SERVICE)`
        : `${where}: permission denied (a security policy refuses it); choose another --port or --host`;
    case "EADDRNOTAVAIL":
      return `${where}: ${host} is not an address of this machine; use --host 0.0.0.0 (every address) or one of its own addresses (ip -brief address lists them)`;
    case "EINVAL":
    case "ENOTFOUND":
    case "EAI_NONAME":
      return `${where}: ${host} is not a valid address or a name this machine resolves; use --host 0.0.0.0 (every address), 127.0.0.1 (this machine only) or one of its own addresses`;
    default:
      return `${where}: ${code ?? "unknown error"}; choose another --host or --port`;
  }
}

export const serve: Command = {
  name: "serve",
  summary: "run the HTTP service (the default command)",
  settings: SETTINGS,
  async run(ctx) {
    const { config, version, out, workers } = ctx;
    // Before anything is opened: the process is replaced (allocator.ts).
    const env = serveEnvironment(locate(config.db).engine, ctx.env);
    if (env !== null) ctx.relaunch(env);
    const clock = Date.now;
    const log = createLogger(
      config.logLevel,
      (line) => process.stderr.write(line),
      clock,
      process.stderr.isTTY === true,
    );
    // Still here: the runtime could not run it again.
    if (env !== null) log.warn(`could not start again with ${PURGE_DELAY}=-1; running with the allocator's default`);
    // A mistake in the alerts file stops serve before anything is opened (exit 2, one line).
    const alerts = config.alerts === null ? undefined : await loadAlerts(config.alerts, process.env);
    // Before the database is opened (and migrated): one server per database file.
    checkLocation(config.db, { create: true });
    // A serve that fails to start leaves no database (nor lock file) behind that it made itself.
    const made = createdBy(config.db);
    const lock = await lockForServing(config.db);
    if (lock.warning) log.warn("serving without a lock", { reason: lock.warning });
    let runtime: Awaited<ReturnType<typeof createRuntime>>;
    try {
      runtime = await createRuntime(
        config,
        { clock, log, version, workers, alerts },
        await openDatabaseOf(ctx, { create: true, checked: true, warn: (text) => log.warn(text) }),
      );
    } catch (e) {
      lock.release();
      made.undo();
      throw e;
    }
    const { app } = runtime;
    try {
      app.listen({ hostname: config.host, port: config.port });
    } catch (e) {
      await runtime.stop();
      lock.release();
      made.undo();
      const code = (e as { code?: unknown }).code;
      const root = process.getuid?.() === 0;
      throw new CliError(
        listenFailure(typeof code === "string" ? code : undefined, config.host, config.port, { root }),
        EXIT.listen,
      );
    }
    const port = app.server!.port!;
    runtime.listening(linkBase(config.host, port));
    const jobs = runtime.startJobs();

    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info("shutting down", { signal });
      jobs.stop();
      await app.stop(); // stop accepting; in-flight requests finish
      await runtime.stop(); // everything acknowledged or queued is committed, then the database closed
      lock.release();
      log.info("stopped");
      process.exit(0);
    };
    // Before the address is printed: whoever reads it may stop the server at once.
    process.on("SIGTERM", () => void shutdown("SIGTERM"));
    process.on("SIGINT", () => void shutdown("SIGINT"));

    // The first line on stdout is for scripts and tests (they read the address from it); the rest for people.
    out(`${startupLines(version, config.host, port).join("\n")}\n`);
    log.info("listening", { host: config.host, port, db: displayLocation(config.db), durability: config.durability });
    if (alerts)
      log.info("alerts on", {
        file: alerts.file,
        rules: alerts.rules.length,
        channels: alerts.channels.map((c) => `${c.name} (${c.type})`),
        links: config.publicUrl ?? linkBase(config.host, port),
      });
    return -1;
  },
};
