// An in-process app over an in-memory database, with a clock the test moves by hand, built by the
// service's own composition root.
import { defaults, type Config } from "../../src/config.ts";
import { HOUR } from "../../src/domain/time.ts";
import { statusOf } from "../../src/ingest/status.ts";
import { createLogger } from "../../src/log.ts";
import { createRuntime } from "../../src/runtime.ts";
import type { AlertsConfig } from "../../src/alerts/rules.ts";
import { openSqliteEngine } from "../../src/store/sqlite/engine.ts";

function manualClock(start = Date.parse("2026-06-01T12:00:00Z")) {
  let now = start;
  const clock = () => now;
  clock.advance = (ms: number) => {
    now += ms;
  };
  return clock;
}

export interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** `alerts`: an alerts file's contents, parsed (src/alerts/rules.ts), to run alerts with. */
export async function testApp(overrides: Partial<Config> = {}, extra: { alerts?: AlertsConfig } = {}) {
  const config: Config = { ...defaults, ...overrides };
  // Opened here rather than by the runtime, so tests can look underneath (faults, damaged cells).
  const engine = openSqliteEngine(":memory:", { durability: "normal", migrate: true });
  const clock = manualClock();
  // As on a server started at the clock's time: what arrives from then on is in open hours
  // (in memory until the fold job stores it), as in production; earlier times go to stored cells.
  // (A new database's mark is the real time of its migration; the fold op only ever raises it.)
  engine.sqlite.run("UPDATE rollup_state SET folded_until = ?", [clock() - (clock() % HOUR)]);
  const logLines: string[] = [];
  const log = createLogger("debug", (line) => logLines.push(line), clock);
  const runtime = await createRuntime(config, { clock, log, version: "0.0.0-test", alerts: extra.alerts }, engine);
  const { app } = runtime;

  async function send(
    method: string,
    path: string,
    body?: string | Uint8Array,
    headers: Record<string, string> = {},
  ): Promise<Reply> {
    const res = await app.handle(
      new Request(`http://localhost${path}`, {
        method,
        body: body instanceof Uint8Array ? new Uint8Array(body) : body,
        headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      }),
    );
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${path} answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
    return { status: res.status, headers: res.headers, body: parsed as Record<string, unknown> };
  }

  return {
    ...runtime,
    sqlite: engine.sqlite,
    clock,
    logLines,
    post: (path: string, body: string | Uint8Array | object, headers?: Record<string, string>) =>
      send("POST", path, typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body), headers),
    get: (path: string, headers?: Record<string, string>) => send("GET", path, undefined, headers),
    /** Any method without a body (admin actions: POST and DELETE with a token). */
    call: (method: string, path: string, headers?: Record<string, string>) => send(method, path, undefined, headers),
    /** The rejected-reports log, oldest first, with the status each request was answered. */
    rejected: async () =>
      (await runtime.store.listRejected({ limit: 1_000_000 }))
        .reverse()
        .map((e) => ({ ...e, httpStatus: statusOf(e.reason, e.result) })),
  };
}

/** A start report as the current container client sends it. */
export function startReport(randomId: string, fields: Record<string, unknown> = {}) {
  return {
    ct_type: 1,
    type: "lxc",
    disk_size: 8,
    core_count: 2,
    ram_size: 2048,
    os_type: "debian",
    os_version: "12",
    disableip6: "yes",
    nsapp: "adguard",
    method: "default",
    pve_version: "8.2.2",
    status: "installing",
    random_id: randomId,
    ...fields,
  };
}
export type TestApp = Awaited<ReturnType<typeof testApp>>;
