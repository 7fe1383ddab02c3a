// The relay to an upstream collector (docs/relay.md, docs/decisions/2026-11-26-relay.md):
// the policy from the config, given to the store (which queues every accepted report in the
// transaction that stores it), the sender started with serve's jobs, and what /healthz, /metrics
// and the admin API say about it.
import { hostname } from "node:os";
import { ConfigError, type Config } from "../config.ts";
import { RELAY_PROTOCOLS, RELAY_REQUIRED_FIELDS, relayTargets, type RelayPolicy } from "../domain/relay.ts";
import { Gauge, type Metrics } from "../http/metrics.ts";
import type { RelayJson } from "./relay-routes.ts";
import type { Logger } from "../log.ts";
import type { RelayStatus } from "../store/contract/relay.ts";
import type { ResultFor, Store, WriteOp } from "../store/contract/store.ts";
import { startSender, type Sender } from "./sender.ts";

/** The relay's policy from the config; null when --relay-url is unset. A setting that cannot work is a ConfigError. */
function relayPolicyOf(config: Config): RelayPolicy | null {
  if (config.relayUrl === null) return null;
  const required = config.relayOmit.filter((f) => (RELAY_REQUIRED_FIELDS as readonly string[]).includes(f));
  if (required.length > 0) {
    throw new ConfigError(
      `--relay-omit: ${required.join(", ")} cannot be left out: the upstream needs ${RELAY_REQUIRED_FIELDS.slice(0, -1).join(", ")} to place a report, and the community service counts a failure without exit_code as a success`,
    );
  }
  if (config.relayTimeoutMs <= 0) throw new ConfigError("--relay-timeout must be longer than 0, e.g. 10s");
  const protocols = RELAY_PROTOCOLS.filter((p) => config.relayProtocols.includes(p));
  const unknown = config.relayProtocols.filter((p) => !(RELAY_PROTOCOLS as readonly string[]).includes(p));
  if (unknown.length > 0 || protocols.length === 0) {
    throw new ConfigError(
      `--relay-protocols: ${unknown.length > 0 ? `${unknown.join(", ")} is not a protocol` : "none given"}; use telemetry, upload or both (telemetry,upload)`,
    );
  }
  return {
    protocols,
    repos: config.relayRepos.map((r) => r.toLowerCase()),
    omit: config.relayOmit,
    maxBytes: config.relayMaxBytes,
  };
}

/** A URL as logs and health show it: without a password. */
function shown(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.href;
}

/** A user and password in the URL (an upstream behind basic authentication) go as an Authorization header. */
function basicAuth(url: string): string | null {
  const u = new URL(url);
  if (u.username === "" && u.password === "") return null;
  return `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString("base64")}`;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The outbox as /healthz, the admin API and `installstats relay` show it; `last_error` is the next entry's. */
export function outboxJson(s: RelayStatus, now: number, maxBytes: number) {
  return {
    paused: s.paused,
    entries: s.entries,
    bytes: s.bytes,
    max_bytes: maxBytes,
    waiting: s.waiting,
    refused: s.refused,
    oldest_age_s: s.head === null ? null : Math.max(0, Math.round((now - s.head.queuedAt) / 100) / 10),
    head_attempts: s.head?.attempts ?? 0,
    last_error: s.head?.lastError ?? null,
    sent: s.sent,
    failed_attempts: s.failedAttempts,
    refusals: s.refusals,
    dropped: s.dropped,
  };
}

export interface RelayDeps {
  config: Config;
  store: Pick<Store, "setRelay" | "relayStatus">;
  submit: <Op extends WriteOp>(op: Op) => Promise<ResultFor<Op>>;
  clock: () => number;
  log: Logger;
  version: string;
  metrics: Metrics;
}

export function createRelay(deps: RelayDeps) {
  const { config, store, clock } = deps;
  const policy = relayPolicyOf(config);
  store.setRelay(policy);
  let sender: Sender | null = null;
  deps.metrics.registry.add(
    new Gauge(
      "installstats_relay_up",
      "1 while this node's sender delivers (or has nothing to send), 0 while it backs off after failures; absent when the relay is off",
      () => (sender === null ? [] : [{ value: sender.state.state === "backing_off" ? 0 : 1 }]),
    ),
  );

  /** The relay's state as /healthz and the admin API show it. */
  async function health(): Promise<RelayJson> {
    const node = sender?.state;
    const outbox = outboxJson(await store.relayStatus(), clock(), config.relayMaxBytes);
    return {
      enabled: policy !== null,
      url: config.relayUrl === null ? null : shown(config.relayUrl),
      state: node?.state ?? "off",
      ...outbox,
      last_sent_at: iso(node?.lastSentAt ?? null),
      last_error: node?.lastError ?? outbox.last_error,
      last_error_at: iso(node?.lastErrorAt ?? null),
      retry_at: iso(node?.retryAt ?? null),
    };
  }

  registerRelayMetrics(deps.metrics, () => store.relayStatus(), clock, config.relayMaxBytes);

  return {
    enabled: policy !== null,
    health,
    /** Starts the sender (serve's jobs); nothing when the relay is off. */
    start(): void {
      if (policy === null || sender !== null) return;
      const targets = relayTargets(config.relayUrl!);
      sender = startSender({
        submit: deps.submit,
        targets,
        authorization: basicAuth(config.relayUrl!),
        timeoutMs: config.relayTimeoutMs,
        rate: config.relayRate,
        // Unique per process: on a shared PostgreSQL database every node's claims are its own.
        owner: `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`,
        userAgent: `installstats/${deps.version} (relay)`,
        clock,
        random: Math.random,
        log: deps.log,
        onAttempt: (result, seconds) => deps.metrics.relayRequestSeconds.observe(seconds, { result }),
      });
      deps.log.info("relay started", {
        url: shown(config.relayUrl!),
        targets: Object.values(targets).map(shown),
        protocols: policy.protocols,
        repos: config.relayRepos,
        omit: config.relayOmit,
      });
    },
    /** Stops the sender: requests in flight are aborted and their entries released (sent again later). */
    async stop(): Promise<void> {
      await sender?.stop();
    },
  };
}

export type Relay = ReturnType<typeof createRelay>;

/** The outbox's gauges and counters (kept in the database: the cluster's, since it was created), read once per scrape. */
function registerRelayMetrics(
  metrics: Metrics,
  status: () => Promise<RelayStatus>,
  clock: () => number,
  maxBytes: number,
): void {
  let pending: Promise<RelayStatus> | null = null;
  const read = () => (pending ??= status().finally(() => queueMicrotask(() => (pending = null))));
  const add = (
    name: string,
    help: string,
    values: (s: RelayStatus) => { labels?: Record<string, string>; value: number }[],
    type: "gauge" | "counter" = "gauge",
  ) => metrics.registry.add(new Gauge(name, help, async () => values(await read()), type));
  add(
    "installstats_relay_outbox_entries",
    "Reports in the relay's outbox, by state: ready (to send), waiting (for their start report), refused (by the upstream; kept until requeued)",
    (s) => [
      { labels: { state: "ready" }, value: s.entries - s.waiting - s.refused },
      { labels: { state: "waiting" }, value: s.waiting },
      { labels: { state: "refused" }, value: s.refused },
    ],
  );
  add("installstats_relay_outbox_bytes", "Bytes of the bodies in the relay's outbox", (s) => [{ value: s.bytes }]);
  add(
    "installstats_relay_outbox_max_bytes",
    "The outbox's bound (--relay-max-outbox); past it the oldest entries are dropped",
    () => [{ value: maxBytes }],
  );
  add(
    "installstats_relay_oldest_entry_age_seconds",
    "Seconds since the next entry to send was queued; absent when there is none",
    (s) => (s.head === null ? [] : [{ value: Math.max(0, (clock() - s.head.queuedAt) / 1000) }]),
  );
  add("installstats_relay_paused", "1 while an admin paused the relay", (s) => [{ value: s.paused ? 1 : 0 }]);
  add(
    "installstats_relay_sent_total",
    "Reports delivered upstream (a 2xx answer)",
    (s) => [{ value: s.sent }],
    "counter",
  );
  add(
    "installstats_relay_failed_attempts_total",
    "Attempts that failed (timeout, network, 5xx, 429, redirect) and are retried with backoff",
    (s) => [{ value: s.failedAttempts }],
    "counter",
  );
  add(
    "installstats_relay_refused_total",
    "Reports the upstream refused (400, 413, 422)",
    (s) => [{ value: s.refusals }],
    "counter",
  );
  add(
    "installstats_relay_dropped_total",
    "Entries dropped from the outbox: bound (the oldest, past --relay-max-outbox), discarded (by an admin)",
    (s) => [
      { labels: { reason: "bound" }, value: s.dropped.bound },
      { labels: { reason: "discarded" }, value: s.dropped.discarded },
    ],
    "counter",
  );
}
