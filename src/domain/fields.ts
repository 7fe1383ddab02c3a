// Every field of an execution's record, one row each: what clients send (and where in their
// bodies), what the server adds, and how each is read, filtered, counted, exported, relayed and
// documented. The request body schemas (ingest/routes.ts), normalization (normalize.ts), the
// read filters (read/query.ts, store/common/filter.ts, read/aggregate.ts), the record and its
// export columns (read/record.ts, read/export.ts), the relay bodies (relay.ts), the import of
// records (transfer/import-records.ts), the Execution type and the field tables of
// docs/protocol.md and docs/api.md (`bun run docs:fields`) all derive from FIELDS.
// The two Drizzle schemas stay hand-written and are checked against it
// (test/unit/fields-table-matches-both-drizzle-schemas.test.ts), so adding a payload field is a row here, a column in each
// schema and a migration.
import { OUTCOMES } from "./outcome.ts";
import type { Endpoint } from "./rejection.ts";

/** Install types the wire protocols know; anything else is refused. */
export const INSTALL_TYPES = ["lxc", "vm", "turnkey", "pve", "addon", "tool"] as const;

/** The longest random_id or execution_id accepted, and so the longest any id parameter can be. */
export const MAX_RANDOM_ID_LENGTH = 128;

/**
 * What an execution is: an installation, or a one-shot run of a host tool or addon. Tools and
 * addons are kept out of install success rates unless asked for (docs/protocol.md#current-clients-post-telemetry).
 */
export const KINDS = ["install", "tool", "addon"] as const;

/** How a value is read from a body (client fields) or made (server fields), and so its type. */
type FieldKind =
  /** Required text of 1 to MAX_RANDOM_ID_LENGTH characters, no control characters, no U+FFFD. */
  | "id"
  /** A word of INSTALL_TYPES, required. */
  | "install-type"
  /** A word, required. */
  | "status"
  /** One line: colour codes and control characters out, trimmed, cut at --max-field-length; "" stays "". */
  | "label"
  /** A label, lowercased. */
  | "label-lower"
  /** A label lowercased; "" is absent. */
  | "word"
  /** Several lines: colour codes out, cut at --max-error-length, IP addresses masked. */
  | "error-text"
  /** A label cut at --max-error-length; "" is absent. */
  | "command"
  /** A whole number within `bounds`. */
  | "integer"
  /** A number within `bounds` in `unit`, which a suffix (32G, 2048M) may scale; rounded when `whole`. */
  | "size"
  /** true/1/yes or false/0/no; "" is absent. */
  | "bool"
  /** One of `values` (made by the server). */
  | "enum"
  /** An instant, epoch milliseconds (ISO 8601 in the record). */
  | "time"
  /** A duration kept in milliseconds, given in seconds in the record. */
  | "ms"
  /** The fields a report carried that the server does not know, as a JSON object. */
  | "json";

/**
 * Where a value lives: a report's head (which execution, which protocol revision), its
 * descriptive `fields`, how the run ended, or only in the stored execution (made by the server).
 */
type Part = "head" | "fields" | "ending" | "server";

interface FieldRow {
  /** snake_case: the key in bodies (unless `wire`), in the record and the CSV header, of the filter, the rollup dimension and the column (unless `column`). */
  readonly name: string;
  /** camelCase: the key of Execution (and of a Report). */
  readonly key: string;
  readonly part: Part;
  readonly kind: FieldKind;
  /** Never null in a stored execution. */
  readonly required?: true;
  readonly values?: readonly string[];
  readonly bounds?: readonly [min: number, max: number];
  readonly unit?: "GiB" | "MiB";
  /** A size rounded to a whole number (units can make it fractional: 1.5G of RAM). */
  readonly whole?: true;
  /** The column's name where it differs from `name`. */
  readonly column?: string;
  /** The body key where it differs from `name` (v1 clients send host_gpu as gpu_passthrough). */
  readonly wire?: string;
  /** Another body key for the same field, read when the first is absent or null. */
  readonly alias?: string;
  /** Positions in the bodies of each protocol that carries it: the order the clients send (and the relay sends and the docs list) them. */
  readonly sent?: Readonly<Partial<Record<Endpoint, number>>>;
  /** Endpoints whose bodies may leave out this required field: normalization fills it in (docs: sentDoc). */
  readonly optionalIn?: readonly Endpoint[];
  /** Only the /telemetry payload versions that send it this way (v1: none or 1, v2+: 2 and above). */
  readonly versions?: "v1" | "v2+";
  /**
   * A read filter of the same name: its place among the parameters, whether its value is matched
   * lowercased (as stored), the values it takes when they are not the field's, one line of docs.
   */
  readonly filter?: {
    readonly at: number;
    readonly lower?: true;
    readonly values?: readonly string[];
    readonly doc: string;
  };
  /** Counted by rollups as a dimension of the same name, by its value as stored (domain/rollup.ts). */
  readonly dimension?: true;
  /** Rollups select it by slice rather than by dimension (a kind, a repo source, an app). */
  readonly slice?: true;
  /** CSV: 1 for the columns every release has exported, which come first; 2 for those after them. */
  readonly csv: 1 | 2;
  /** Its key in the record's `timeline` (the record nests the instants a status was first seen). */
  readonly timeline?: string;
  /** One line for the record's schema and the docs. */
  readonly doc: string;
  /** What the clients' bodies carry, where it differs from `doc` (for every endpoint, or by endpoint). */
  readonly sentDoc?: string | Readonly<Partial<Record<Endpoint, string>>>;
}

/** Every field, in the order of the record. */
export const FIELDS = [
  {
    name: "random_id",
    key: "randomId",
    part: "head",
    kind: "id",
    required: true,
    bounds: [1, MAX_RANDOM_ID_LENGTH],
    sent: { upload: 13, updatestatus: 3, telemetry: 2 },
    filter: { at: 10, doc: "one install's executions" },
    csv: 1,
    doc: "one installation (session); client-generated, a UUID in practice",
  },
  {
    name: "execution_id",
    key: "executionId",
    part: "head",
    kind: "id",
    required: true,
    bounds: [1, MAX_RANDOM_ID_LENGTH],
    sent: { telemetry: 3 },
    optionalIn: ["telemetry"],
    csv: 2,
    doc: "one attempt of the install; = random_id for /upload reports and first runs",
    sentDoc: "one attempt: equals `random_id` on the first run, a new id for each retry; absent means `random_id`",
  },
  {
    name: "attempt",
    key: "attempt",
    part: "server",
    kind: "integer",
    required: true,
    csv: 2,
    doc: "1 for the install's first execution, n for its n-th (retries)",
  },
  {
    name: "kind",
    key: "kind",
    part: "server",
    kind: "enum",
    required: true,
    values: KINDS,
    slice: true,
    csv: 2,
    filter: {
      at: 9,
      values: [...KINDS, "all"],
      doc: "install (default): installations; tool: host tools (type pve); addon; all: every kind",
    },
    doc: "tools (type pve) and addons are kept out of install rates unless asked for",
  },
  {
    name: "payload_version",
    key: "payloadVersion",
    part: "head",
    kind: "integer",
    bounds: [1, 1_000_000],
    sent: { telemetry: 1 },
    versions: "v2+",
    csv: 2,
    doc: "/telemetry payload version (1 when absent); null for /upload reports",
    sentDoc: "`2` in v2; absent in v1; above 2 accepted, unknown fields kept in `extra`",
  },
  {
    name: "type",
    key: "type",
    part: "fields",
    kind: "install-type",
    required: true,
    sent: { upload: 2, telemetry: 4 },
    filter: { at: 4, lower: true, doc: "lxc, vm, turnkey, pve, addon, tool" },
    dimension: true,
    csv: 1,
    doc: "install type: `lxc`, `vm`, `turnkey`, `pve` (host tool), `addon`, `tool`",
  },
  {
    name: "ct_type",
    key: "ctType",
    part: "fields",
    kind: "integer",
    bounds: [0, 2],
    sent: { upload: 1, telemetry: 7 },
    dimension: true,
    csv: 1,
    doc: "container type code; 2 for VMs",
  },
  {
    name: "disk_size",
    key: "diskSize",
    part: "fields",
    kind: "size",
    bounds: [0, 100_000],
    unit: "GiB",
    sent: { upload: 3, telemetry: 8 },
    dimension: true,
    csv: 1,
    doc: "disk given to the guest, GiB",
  },
  {
    name: "core_count",
    key: "coreCount",
    part: "fields",
    kind: "integer",
    bounds: [0, 256],
    sent: { upload: 4, telemetry: 9 },
    dimension: true,
    csv: 1,
    doc: "CPU cores given to the guest",
  },
  {
    name: "ram_size",
    key: "ramSize",
    part: "fields",
    kind: "size",
    bounds: [0, 1_048_576],
    unit: "MiB",
    whole: true,
    sent: { upload: 5, telemetry: 10 },
    dimension: true,
    csv: 1,
    doc: "RAM given to the guest, MiB",
  },
  {
    name: "os_type",
    key: "osType",
    part: "fields",
    kind: "label-lower",
    sent: { upload: 6, telemetry: 11 },
    filter: { at: 5, lower: true, doc: "e.g. debian" },
    csv: 1,
    doc: "the guest's OS, lowercased",
  },
  {
    name: "os_version",
    key: "osVersion",
    part: "fields",
    kind: "label",
    sent: { upload: 7, telemetry: 12 },
    filter: { at: 6, doc: "e.g. 12" },
    csv: 1,
    doc: "the guest OS's version",
  },
  {
    name: "disableip6",
    key: "disableip6",
    part: "fields",
    kind: "label-lower",
    sent: { upload: 8, telemetry: 13 },
    csv: 1,
    doc: 'absent in older clients, `""` for VMs',
  },
  {
    name: "nsapp",
    key: "nsapp",
    part: "fields",
    kind: "label",
    sent: { upload: 9, telemetry: 5 },
    filter: { at: 1, doc: "application name" },
    dimension: true,
    slice: true,
    csv: 1,
    doc: "the application being installed",
  },
  {
    name: "method",
    key: "method",
    part: "fields",
    kind: "label",
    sent: { upload: 10, telemetry: 15 },
    filter: { at: 8, doc: "installation method" },
    dimension: true,
    csv: 1,
    doc: "the installation method",
  },
  {
    name: "pve_version",
    key: "pveVersion",
    part: "fields",
    kind: "label",
    alias: "host_version",
    sent: { upload: 11, telemetry: 14 },
    filter: { at: 7, doc: 'host version, e.g. 8.2.2 or "not found"' },
    dimension: true,
    csv: 1,
    doc: "the host's version, `not found` when unknown, `incus-6.x` on Incus; `host_version` is accepted as an alias",
  },
  {
    name: "status",
    key: "status",
    part: "ending",
    kind: "status",
    required: true,
    sent: { upload: 12, updatestatus: 1, telemetry: 6 },
    optionalIn: ["upload"],
    filter: { at: 2, lower: true, doc: "status as stored (lowercase), e.g. done, failed, installing" },
    dimension: true,
    csv: 1,
    doc: "as the client sent it, lowercased",
    sentDoc: {
      upload: "`installing` (absent means the same)",
      updatestatus: "`done`, `failed`, … (lowercased)",
      telemetry: "`installing`, `validation`, `configuring`, `success`, `failed`, `aborted`, `unknown`",
    },
  },
  {
    name: "outcome",
    key: "outcome",
    part: "ending",
    kind: "enum",
    required: true,
    values: OUTCOMES,
    filter: {
      at: 3,
      doc: "derived from status and exit code: success (done), failed, blocked (by the host, before the script ran), aborted (by the user), in_progress, unknown",
    },
    csv: 1,
    doc: "derived from status and exit code: success (done), failed, blocked (by the host, before the script ran), aborted (by the user), in_progress, unknown",
  },
  {
    name: "error",
    key: "error",
    part: "ending",
    kind: "error-text",
    sent: { updatestatus: 2, telemetry: 17 },
    csv: 1,
    doc: "free text; IP addresses are masked",
    sentDoc: {
      telemetry:
        "`exit_code=N | <explanation> | at line L: <cmd>` then `---` and up to 60 lines (~10 KiB) of log; IP addresses are masked",
    },
  },
  {
    name: "created_at",
    key: "createdAt",
    part: "server",
    kind: "time",
    required: true,
    csv: 1,
    doc: "when the first report arrived",
  },
  {
    name: "updated_at",
    key: "updatedAt",
    part: "server",
    kind: "time",
    required: true,
    csv: 1,
    doc: "when the last report that changed it arrived",
  },
  {
    name: "duration_s",
    key: "durationMs",
    part: "server",
    kind: "ms",
    column: "duration_ms",
    csv: 1,
    doc: "start report to final status; null while in progress or when the final status arrived first",
  },
  {
    name: "repaired",
    key: "repaired",
    part: "server",
    kind: "bool",
    required: true,
    csv: 1,
    doc: "a report of it needed repair",
  },
  {
    name: "exit_code",
    key: "exitCode",
    part: "ending",
    kind: "integer",
    bounds: [0, 255],
    sent: { telemetry: 16 },
    filter: { at: 11, doc: "exit code of the execution" },
    dimension: true,
    csv: 2,
    doc: "kept only with a final status (the client sends 0 while installing); `/upload`: read from the error text",
  },
  {
    name: "error_category",
    key: "errorCategory",
    part: "ending",
    kind: "label",
    sent: { telemetry: 18 },
    filter: {
      at: 12,
      lower: true,
      doc: "network, config, timeout, storage, dependency, permission, proxmox, service, database, runtime, user_aborted, resource, signal, shell, unknown",
    },
    dimension: true,
    csv: 2,
    doc: "the client's, else derived from exit code and error text",
  },
  {
    name: "failed_command",
    key: "failedCommand",
    part: "ending",
    kind: "command",
    sent: { telemetry: 31 },
    csv: 2,
    doc: "the command that failed (v2); kept only with a final status",
  },
  {
    name: "failed_line",
    key: "failedLine",
    part: "ending",
    kind: "integer",
    bounds: [0, 10_000_000],
    sent: { telemetry: 32 },
    csv: 2,
    doc: "the script line that failed (v2); 0 is absent; kept only with a final status",
  },
  {
    name: "install_duration",
    key: "installDuration",
    part: "ending",
    kind: "integer",
    bounds: [0, 86_400],
    sent: { telemetry: 19 },
    csv: 2,
    doc: "seconds, as the client measured them",
  },
  {
    name: "cpu_vendor",
    key: "cpuVendor",
    part: "fields",
    kind: "label",
    sent: { telemetry: 20 },
    filter: { at: 15, doc: "e.g. intel, amd" },
    dimension: true,
    csv: 2,
    doc: "the host's CPU vendor",
  },
  {
    name: "cpu_model",
    key: "cpuModel",
    part: "fields",
    kind: "label",
    sent: { telemetry: 21 },
    csv: 2,
    doc: "the host's CPU model",
  },
  {
    name: "gpu_vendor",
    key: "gpuVendor",
    part: "fields",
    kind: "label",
    sent: { telemetry: 22 },
    filter: { at: 16, doc: "e.g. intel, nvidia, amd" },
    dimension: true,
    csv: 2,
    doc: "the host's GPU vendor",
  },
  {
    name: "gpu_model",
    key: "gpuModel",
    part: "fields",
    kind: "label",
    sent: { telemetry: 23 },
    csv: 2,
    doc: "the host's GPU model",
  },
  {
    name: "ram_speed",
    key: "ramSpeed",
    part: "fields",
    kind: "label",
    sent: { telemetry: 25 },
    csv: 2,
    doc: "the host's RAM speed",
  },
  {
    name: "gpu_passthrough",
    key: "gpuPassthrough",
    part: "fields",
    kind: "word",
    sent: { telemetry: 24 },
    versions: "v2+",
    filter: { at: 17, lower: true, doc: "yes or no (payload v2)" },
    dimension: true,
    csv: 2,
    doc: "v2: yes/no, a GPU was passed to the guest",
    sentDoc:
      "v1: what the host has (`igpu`, `dgpu`, `unknown`), stored as `host_gpu`; v2: whether a GPU was passed to the guest (`yes`/`no`)",
  },
  {
    name: "host_gpu",
    key: "hostGpu",
    part: "fields",
    kind: "word",
    wire: "gpu_passthrough",
    sent: { telemetry: 24 },
    versions: "v1",
    dimension: true,
    csv: 2,
    doc: "v1's gpu_passthrough: what the host has (igpu, dgpu, unknown)",
  },
  {
    name: "arch",
    key: "arch",
    part: "fields",
    kind: "word",
    sent: { telemetry: 26 },
    filter: { at: 14, lower: true, doc: "e.g. amd64, arm64" },
    dimension: true,
    csv: 2,
    doc: "the host's architecture",
  },
  {
    name: "platform",
    key: "platform",
    part: "fields",
    kind: "word",
    sent: { telemetry: 27 },
    filter: { at: 13, lower: true, doc: "pve or incus" },
    dimension: true,
    csv: 2,
    doc: "`pve` or `incus`",
  },
  {
    name: "has_arm",
    key: "hasArm",
    part: "fields",
    kind: "bool",
    sent: { telemetry: 28 },
    csv: 2,
    doc: "the host is ARM",
  },
  {
    name: "repo_source",
    key: "repoSource",
    part: "fields",
    kind: "label",
    sent: { telemetry: 33 },
    filter: {
      at: 18,
      doc: 'ProxmoxVE (the main collection), ProxmoxVED (its dev repo), external (forks); "" for reports that say none (/upload)',
    },
    dimension: true,
    slice: true,
    csv: 2,
    doc: "`ProxmoxVE`, `ProxmoxVED` (its dev repository), `external` (forks)",
  },
  {
    name: "repo_slug",
    key: "repoSlug",
    part: "fields",
    kind: "label",
    sent: { telemetry: 34 },
    filter: { at: 19, doc: "owner/repo of a fork" },
    dimension: true,
    csv: 2,
    doc: "`owner/repo` of the scripts' repository",
  },
  {
    name: "kernel_version",
    key: "kernelVersion",
    part: "fields",
    kind: "label",
    sent: { telemetry: 29 },
    filter: { at: 21, doc: "host kernel version" },
    dimension: true,
    csv: 2,
    doc: "the host's kernel version",
  },
  {
    name: "app_version",
    key: "appVersion",
    part: "fields",
    kind: "label",
    sent: { telemetry: 30 },
    filter: { at: 20, doc: "version of the installed app" },
    dimension: true,
    csv: 2,
    doc: "the installed app's version",
  },
  {
    name: "installing_at",
    key: "installingAt",
    part: "server",
    kind: "time",
    timeline: "installing",
    csv: 2,
    doc: "when `installing` was first seen",
  },
  {
    name: "validation_at",
    key: "validationAt",
    part: "server",
    kind: "time",
    timeline: "validation",
    csv: 2,
    doc: "when `validation` was first seen",
  },
  {
    name: "configuring_at",
    key: "configuringAt",
    part: "server",
    kind: "time",
    timeline: "configuring",
    csv: 2,
    doc: "when `configuring` was first seen",
  },
  {
    name: "finished_at",
    key: "finishedAt",
    part: "server",
    kind: "time",
    timeline: "finished",
    csv: 2,
    doc: "when a final status was first seen",
  },
  {
    name: "extra",
    key: "extra",
    part: "fields",
    kind: "json",
    csv: 2,
    doc: "fields this server does not know, as sent",
  },
] as const satisfies readonly FieldRow[];

export type Field = (typeof FIELDS)[number];

/** The value a field holds in an execution. */
type ValueOf<R> = R extends { kind: "enum"; values: readonly (infer V)[] }
  ? V
  : R extends { kind: "integer" | "size" | "time" | "ms" }
    ? number
    : R extends { kind: "bool" }
      ? boolean
      : string;
type Value<R> = ValueOf<R> | (R extends { required: true } ? never : null);

/** The values of one part, keyed as Execution is. */
export type PartValues<P extends Part> = {
  -readonly [R in Field as R extends { part: P } ? R["key"] : never]: Value<R>;
};

/** Rows of one part. */
export type FieldOf<P extends Part> = Extract<Field, { part: P }>;

/** The fields of a part, in record order. */
export const fieldsOf = <P extends Part>(part: P): FieldOf<P>[] =>
  FIELDS.filter((f): f is FieldOf<P> => f.part === part);

/** Every row by its name. */
export const FIELD = Object.fromEntries(FIELDS.map((f) => [f.name, f])) as { [R in Field as R["name"]]: R };

/** A row that is a read filter. */
export type FilterField = Extract<Field, { filter: object }>;
/** The read filters, in the order of their parameters. */
export const FILTER_FIELDS: readonly FilterField[] = FIELDS.filter((f): f is FilterField => "filter" in f).sort(
  (a, b) => a.filter.at - b.filter.at,
);
/** What a filter selects: the field's value (kind: one of KINDS, not "all"). */
export type FilterValues = { -readonly [R in FilterField as R["key"]]?: ValueOf<R> };

/** How a filter matches: a label's "" selects the executions without one; ids, numbers and enums match exactly. */
export const matchesLabel = (f: Field): boolean => f.kind !== "id" && f.kind !== "enum" && f.kind !== "integer";

/** A row a protocol's bodies carry. */
export type SentField = Extract<Field, { sent: object }>;
/** The rows the bodies sent to an endpoint carry, in the order the clients send them. */
export function sentIn(endpoint: Endpoint): SentField[] {
  const at = (f: SentField): number | undefined => (f.sent as Partial<Record<Endpoint, number>>)[endpoint];
  return FIELDS.filter((f): f is SentField => "sent" in f && at(f) !== undefined).sort((a, b) => at(a)! - at(b)!);
}
/** What the bodies sent to an endpoint carry in a field, in one line. */
export function sentDocOf(f: SentField, endpoint: Endpoint): string {
  if (!("sentDoc" in f)) return f.doc;
  return typeof f.sentDoc === "string"
    ? f.sentDoc
    : ((f.sentDoc as Partial<Record<Endpoint, string>>)[endpoint] ?? f.doc);
}

/** Whether the bodies sent to an endpoint must carry a field. */
export const requiredIn = (f: SentField, endpoint: Endpoint): boolean =>
  "required" in f && !("optionalIn" in f && (f.optionalIn as readonly Endpoint[]).includes(endpoint));

/** The key a row is read from in a body. */
export const wireName = (f: SentField): string => ("wire" in f ? f.wire : f.name);

/** Every key a report of any protocol may carry: anything else is kept in `extra`. */
export const WIRE_KEYS: ReadonlySet<string> = new Set(
  FIELDS.flatMap((f) => ("sent" in f ? [wireName(f), ...("alias" in f ? [f.alias] : [])] : [])),
);

/** Whether a /telemetry report of this payload version (null: /upload) carries a row limited to some versions. */
export function inVersion(f: Field, payloadVersion: number | null): boolean {
  if (!("versions" in f)) return true;
  if (payloadVersion === null) return false;
  return f.versions === "v2+" ? payloadVersion >= 2 : payloadVersion < 2;
}

/** A row that is a rollup dimension counted by its value as stored. */
export type DimensionField = Extract<Field, { dimension: true }>;
