// `installstats healthcheck`: asks a server on this machine for GET /healthz and exits 0 only when
// it answers 200. A container image built FROM scratch has no curl: its HEALTHCHECK runs this.
import type { Command } from "./command.ts";
import { EXIT, UsageError } from "./errors.ts";

/** Where a server bound to `host` is reached from this machine: a wildcard address is reached on loopback. */
export function loopbackOf(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

export const healthcheck: Command = {
  name: "healthcheck",
  summary: "ask the server on --host/--port for GET /healthz; exit 0 when it answers 200 (for container health checks)",
  settings: ["host", "port"],
  flags: { timeout: { type: "string", help: "seconds to wait for the answer (default 3)" } },
  async run(ctx) {
    const { config, flags, out } = ctx;
    const timeout = flags.timeout === undefined ? 3 : Number(flags.timeout);
    if (!Number.isFinite(timeout) || timeout <= 0)
      throw new UsageError("--timeout must be a positive number of seconds, such as 3");
    if (config.port === 0)
      throw new UsageError(
        "--port 0 names no server; give the port the server listens on (--port or INSTALLSTATS_PORT)",
      );
    const url = `http://${loopbackOf(config.host)}:${config.port}/healthz`;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(timeout * 1000) });
      const body = (await res.json().catch(() => null)) as { status?: unknown } | null;
      out(`${url}: ${res.status} ${typeof body?.status === "string" ? body.status : ""}\n`.replace(" \n", "\n"));
      return res.status === 200 ? EXIT.ok : EXIT.failed;
    } catch (e) {
      const reason =
        e instanceof Error && e.name === "TimeoutError"
          ? `no answer within ${timeout} s`
          : e instanceof Error
            ? e.message
            : String(e);
      out(`${url}: unreachable (${reason})\n`);
      return EXIT.failed;
    }
  },
};
