// The relay to an upstream collector (docs/relay.md): which accepted
// reports go upstream, and the body each one is sent as, in the protocol it came by. Pure: the
// store calls these inside the transaction that stores the report, so the outbox entry is built
// from the report as stored (normalized, error texts masked) and committed with it.
import type { Descriptive, Report } from "./execution.ts";
import { inVersion, sentIn, wireName, type SentField } from "./fields.ts";
import { ENDPOINTS, type Endpoint } from "./rejection.ts";

/** The protocols a relay may forward: /telemetry, and /upload with /upload/updatestatus (the old clients'). */
export const RELAY_PROTOCOLS = ["telemetry", "upload"] as const;
type RelayProtocol = (typeof RELAY_PROTOCOLS)[number];

/** What a store relays: which protocols and repositories, which fields left out, and the outbox's bound. */
export interface RelayPolicy {
  /** Reports that came by these protocols are relayed (the community's service takes /telemetry only). */
  protocols: readonly RelayProtocol[];
  /**
   * repo_source values (ProxmoxVE, ProxmoxVED, external) or owner/repo slugs, lowercased; empty:
   * every report. A report without repo_source counts as the community service counts it (relayRepo).
   */
  repos: readonly string[];
  /** Wire field names never sent upstream (error, cpu_model, ...). */
  omit: readonly string[];
  /** Bytes of bodies the outbox may hold; past it the oldest entries are dropped (and counted). */
  maxBytes: number;
}

/**
 * Fields the upstream needs to place a report at all (it refuses a report without random_id,
 * type, nsapp or status), and exit_code: the community service takes a failure without one as a
 * success. They cannot be left out.
 */
export const RELAY_REQUIRED_FIELDS = [
  "random_id",
  "execution_id",
  "payload_version",
  "type",
  "nsapp",
  "status",
  "exit_code",
] as const;

/** Where a report goes upstream: the endpoint it arrived at. */
export function endpointOf(report: Report): Endpoint {
  if (report.payloadVersion !== null) return "telemetry";
  return report.fields === null ? "updatestatus" : "upload";
}

/**
 * Upstream URLs of each endpoint. `url` is the upstream's origin (or origin and path prefix) to
 * which the protocols' paths are appended; a URL ending in /telemetry (a TELEMETRY_URL as the
 * scripts use it) or /upload names that endpoint, and the others sit beside it.
 */
export function relayTargets(url: string): Record<Endpoint, string> {
  const u = new URL(url);
  const base = u.pathname.replace(/\/+$/, "").replace(/\/(telemetry|upload(\/updatestatus)?)$/, "");
  const at = (path: string) => `${u.origin}${base}${path}`;
  return { telemetry: at("/telemetry"), upload: at("/upload"), updatestatus: at("/upload/updatestatus") };
}

/**
 * The repository a report counts under upstream, lowercased: its repo_source; without one, what its
 * slug names (…/ProxmoxVE, …/ProxmoxVED, else external), and without either ProxmoxVE, as the
 * community service files untagged reports (its dashboards fold them into ProxmoxVE).
 */
export function relayRepo(fields: Pick<Descriptive, "repoSource" | "repoSlug"> | null): {
  source: string;
  slug: string | null;
} {
  const slug = fields?.repoSlug?.toLowerCase() || null;
  const sent = fields?.repoSource?.toLowerCase();
  if (sent) return { source: sent, slug };
  if (slug?.endsWith("/proxmoxved")) return { source: "proxmoxved", slug };
  if (slug && !slug.endsWith("/proxmoxve")) return { source: "external", slug };
  return { source: "proxmoxve", slug };
}

/** Whether reports that came by this report's protocol are relayed. */
export const protocolRelayed = (policy: RelayPolicy, report: Report): boolean =>
  policy.protocols.includes(report.payloadVersion === null ? "upload" : "telemetry");

/** Whether a report of an execution with these fields is relayed: an item with "/" matches the slug, any other the repo_source. */
export function relayable(policy: RelayPolicy, fields: Pick<Descriptive, "repoSource" | "repoSlug"> | null): boolean {
  if (policy.repos.length === 0) return true;
  const repo = relayRepo(fields);
  return policy.repos.some((item) => (item.includes("/") ? item === repo.slug : item === repo.source));
}

type Value = string | number | boolean | null;

/** One key of a relayed body: its name, and where the report holds its value. */
interface WireKey {
  name: string;
  value: (report: Report) => Value;
  field: SentField;
}
const wireKey = (f: SentField): WireKey => ({
  name: wireName(f),
  value: f.part === "fields" ? (r) => r.fields?.[f.key] ?? null : (r) => r[f.key],
  field: f,
});
/** The keys of each protocol in the order the real clients send them (domain/fields.ts `sent`). */
const WIRE_KEYS = Object.fromEntries(ENDPOINTS.map((e) => [e, sentIn(e).map(wireKey)])) as Record<Endpoint, WireKey[]>;

/**
 * The JSON body a report is relayed as: the keys of its protocol in the clients' order, then the
 * fields this server did not know (kept in `extra`), without absent values and without `omit`.
 */
export function relayBody(report: Report, omit: readonly string[]): string {
  // No prototype: a client's key such as "__proto__" or "constructor" is a key like any other.
  const out = Object.create(null) as Record<string, unknown>;
  // A report carries the rows of its payload version only (domain/fields.ts `versions`: v1 sent no payload_version).
  for (const { name, value, field } of WIRE_KEYS[endpointOf(report)]) {
    if (!inVersion(field, report.payloadVersion)) continue;
    const v = value(report);
    if (v !== null && !omit.includes(name)) out[name] = v;
  }
  const extra = report.fields?.extra;
  if (extra) {
    for (const [key, value] of Object.entries(JSON.parse(extra) as Record<string, unknown>)) {
      if (!Object.hasOwn(out, key) && !omit.includes(key)) out[key] = value;
    }
  }
  return JSON.stringify(out);
}
