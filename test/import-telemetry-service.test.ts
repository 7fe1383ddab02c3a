// Import of the community telemetry service's table (issue 26): dumps built from its schema as
// clickhouse-client writes them (JSONEachRow, CSVWithNames; its default times in the server's
// zone, ISO times, quoted numbers; v1-era rows without the v2 columns), with every status,
// retries, the stuck-install cleanup's `unknown` rows, rows before execution ids, whole-row
// duplicates, two final rows of one run, rows out of order, bad rows and long nasty error texts.
// On both engines: the same executions from every form of the dump, an import run again changes
// nothing, refusals are kept in the rejected-reports log once, and the rollups equal a recount.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { defaults } from "../src/config.ts";
import type { Execution } from "../src/domain/execution.ts";
import { verifyRollups } from "../src/maintenance/verify.ts";
import type { Store } from "../src/store/contract.ts";
import type { Engine } from "../src/store/engine.ts";
import { openEngine } from "../src/store/open.ts";
import { sniff } from "../src/transfer/input-format.ts";
import { importServiceDump, type DumpSummary } from "../src/transfer/telemetry-service-dump.ts";
import { createDatabase, startPostgres, type PgServer } from "./helpers/postgres.ts";
import { V1_COLUMNS, csvWithNames, jsonEachRow, serviceRow, type ServiceRow } from "./helpers/telemetry-service.ts";

setDefaultTimeout(60_000);

const NORMALIZE = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };
const T0 = Date.parse("2026-05-01T08:00:00.250Z");
const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;

/** Every field a current (v2) client sends with each report, as the service stores them. */
const full = (over: Partial<ServiceRow> & { created: number | string }): ServiceRow =>
  serviceRow({
    nsapp: "jellyfin", type: "lxc", method: "default", core_count: 2, ct_type: 1, disk_size: 8, ram_size: 2048, os_type: "debian", os_version: "12",
    pve_version: "8.4.1", repo_source: "ProxmoxVE", repo_slug: "community-scripts/ProxmoxVE", cpu_vendor: "amd", cpu_model: "AMD Ryzen 7 5800X",
    gpu_vendor: "intel", gpu_model: "Intel UHD Graphics 770", gpu_passthrough: "yes", ram_speed: "3200", platform: "pve", payload_version: 2,
    arch: "amd64", kernel_version: "6.8.12-4-pve", ...over,
  });

/** The minimal ping from inside the container: only these fields; the service stores the rest at their defaults, vendors as "unknown". */
const ping = (over: Partial<ServiceRow> & { created: number }): ServiceRow =>
  serviceRow({ type: "lxc", nsapp: "jellyfin", platform: "pve", repo_source: "ProxmoxVE", repo_slug: "community-scripts/ProxmoxVE", payload_version: 2, cpu_vendor: "unknown", gpu_vendor: "unknown", gpu_passthrough: "unknown", ...over });

/** A long error text with everything bash interpolation and log tails put there. */
const NASTY_HEAD = 'exit_code=100 | APT failed | at line 57: apt-get install -y "jellyfin" \\\n---\n';
const NASTY_LOG = [
  'E: Unable to locate package "jellyfin-ffmpeg7" \'quoted\' \\backslash\\ /slashes/',
  "tabs\there\tand\r\nCRLF line",
  "unicode: 🚀 日本語 عربى Ünïcödé \u2028line separator\u2029",
  "control: \u0001\u0007bell \u001b[31mred\u001b[0m ansi \u0000nul",
  "{\"json\": [1, 2, {\"a\": null}]}, a,comma,\"quoted,comma\"",
].join("\n");
const NASTY = NASTY_HEAD + `${NASTY_LOG}\n`.repeat(400); // ~100 KB, under the 128 KiB both services keep

/** What ingestion keeps of an error text: no colour codes, no control characters but line breaks and tabs, CRLF as LF, trimmed. */
const kept = (text: string) =>
  text.replace(/\u001b\[[0-9;]*m/g, "").replace(/\r\n/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "").trim();

const R = (name: string) => `00000000-0000-4000-8000-${name.padStart(12, "0")}`;

function scenario(): ServiceRow[] {
  const ret = R("a1"), retry = R("a2"), vm = R("b1"), old = R("c1"), stuck = R("d1"), tool = R("e1"), addon = R("f1"), unk = R("a7");
  const legacy = R("a8"), two = R("a9"), late = R("aa"), going = R("ab");
  return [
    // A retried install: validation, the minimal configuring ping, a failure with the whole log; then a new execution that succeeds.
    full({ random_id: ret, execution_id: ret, status: "installing", created: T0 }),
    full({ random_id: ret, execution_id: ret, status: "validation", created: T0 + 10 * S }),
    ping({ random_id: ret, execution_id: ret, status: "configuring", created: T0 + MIN }),
    full({ random_id: ret, execution_id: ret, status: "failed", exit_code: 100, error: NASTY, error_category: "dependency", failed_command: "apt-get install -y jellyfin", failed_line: 57, install_duration: 300, created: T0 + 5 * MIN }),
    full({ random_id: ret, execution_id: retry, status: "installing", created: T0 + 7 * MIN }),
    full({ random_id: ret, execution_id: retry, status: "success", exit_code: 0, install_duration: 290, app_version: "10.10.3", created: T0 + 12 * MIN }),
    // A VM the user aborted.
    full({ random_id: vm, execution_id: vm, type: "vm", nsapp: "haos-vm", ct_type: 2, os_type: "", os_version: "", status: "installing", created: T0 + 20 * MIN }),
    full({ random_id: vm, execution_id: vm, type: "vm", nsapp: "haos-vm", ct_type: 2, os_type: "", os_version: "", status: "aborted", exit_code: 130, error: "exit_code=130 | Interrupted by user (SIGINT)", error_category: "user_aborted", created: T0 + 21 * MIN }),
    // A v1 client: no payload_version (0), gpu_passthrough is the host's GPU kind, has_arm never sent.
    full({ random_id: old, execution_id: old, payload_version: 0, gpu_passthrough: "igpu", platform: "", arch: "", kernel_version: "", status: "installing", created: T0 + 30 * MIN }),
    full({ random_id: old, execution_id: old, payload_version: 0, gpu_passthrough: "igpu", platform: "", arch: "", kernel_version: "", status: "success", created: T0 + 33 * MIN }),
    // Stuck at configuring: the cleanup's row (type, nsapp, ids and repo_source copied; everything else at its default).
    full({ random_id: stuck, execution_id: stuck, nsapp: "nextcloud", status: "installing", created: T0 + 40 * MIN }),
    ping({ random_id: stuck, execution_id: stuck, nsapp: "nextcloud", status: "configuring", created: T0 + 42 * MIN }),
    serviceRow({ random_id: stuck, execution_id: stuck, nsapp: "nextcloud", type: "lxc", repo_source: "ProxmoxVE", status: "unknown", error: "Installation timed out - no completion status received after 1h", error_category: "timeout", created: T0 + 3 * HOUR }),
    // A host tool and an addon: one report each, final.
    full({ random_id: tool, execution_id: tool, type: "pve", nsapp: "post-pve-install", ct_type: 0, disk_size: 0, core_count: 0, ram_size: 0, os_type: "", os_version: "", status: "success", exit_code: 0, created: T0 + 50 * MIN }),
    full({ random_id: addon, execution_id: addon, type: "addon", nsapp: "netdata", ct_type: 0, disk_size: 0, core_count: 0, ram_size: 0, status: "success", exit_code: 0, created: T0 + 51 * MIN }),
    // The client's own unknown final.
    full({ random_id: unk, execution_id: unk, nsapp: "gitea", status: "installing", created: T0 + 60 * MIN }),
    full({ random_id: unk, execution_id: unk, nsapp: "gitea", status: "unknown", exit_code: 1, error: "exit_code=1 | General error", error_category: "unknown", created: T0 + 62 * MIN }),
    // Before execution ids: '' there; the run is its random_id.
    full({ random_id: legacy, execution_id: "", payload_version: 0, nsapp: "adguard", status: "installing", created: T0 + 70 * MIN }),
    full({ random_id: legacy, execution_id: "", payload_version: 0, nsapp: "adguard", status: "failed", exit_code: 1, error: "exit code 1", error_category: "shell", created: T0 + 71 * MIN }),
    // Written before the service kept one final row per execution: the first stands, the second is refused (kept in the log).
    full({ random_id: two, execution_id: two, nsapp: "docker", status: "installing", created: T0 + 80 * MIN }),
    full({ random_id: two, execution_id: two, nsapp: "docker", status: "failed", exit_code: 1, error: "exit_code=1 | x", error_category: "shell", created: T0 + 81 * MIN }),
    full({ random_id: two, execution_id: two, nsapp: "docker", status: "success", exit_code: 0, created: T0 + 81 * MIN + 5 }),
    // The start row written after the final row (its write was retried): the final waits for it, as ingestion holds one; no duration.
    full({ random_id: late, execution_id: late, nsapp: "pihole", status: "failed", exit_code: 6, error: "exit_code=6 | Could not resolve host", error_category: "network", created: T0 + 90 * MIN }),
    full({ random_id: late, execution_id: late, nsapp: "pihole", status: "installing", created: T0 + 90 * MIN + 3 * S }),
    // Still going when the dump was taken.
    full({ random_id: going, execution_id: going, nsapp: "immich", status: "installing", created: T0 + 4 * HOUR }),
    // Refused: an unknown type, no random_id, a time that is none.
    full({ random_id: R("b2"), execution_id: R("b2"), type: "bogus", status: "installing", created: T0 + 95 * MIN }),
    full({ random_id: "", execution_id: "", status: "installing", created: T0 + 96 * MIN }),
    full({ random_id: R("b3"), execution_id: R("b3"), status: "installing", created: "yesterday" }),
  ];
}

const ROWS = scenario();
/** Whole rows repeated (a dump taken twice into one file): counted once. */
const DUMP_ROWS = [...ROWS, ROWS[3]!, ROWS[6]!];

const encoder = new TextEncoder();
async function* chunked(data: string | Uint8Array, size = 7000): AsyncGenerator<Uint8Array> {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

/** The variants of the same dump, each with how to read it. */
const DUMPS: { name: string; data: () => string | Uint8Array; zone: string }[] = [
  { name: "JSONEachRow, server in UTC", data: () => jsonEachRow(DUMP_ROWS), zone: "UTC" },
  { name: "JSONEachRow, ISO times, numbers quoted", data: () => jsonEachRow(DUMP_ROWS, { timeFormat: "iso", quoteNumbers: true }), zone: "America/New_York" },
  { name: "CSVWithNames, server in Europe/Berlin", data: () => csvWithNames(DUMP_ROWS, { zone: "Europe/Berlin" }), zone: "Europe/Berlin" },
];

async function runImport(store: Store, data: string | Uint8Array, zone: string, runChars?: number): Promise<DumpSummary> {
  const input = await sniff(chunked(data));
  expect(["clickhouse-jsoneachrow", "clickhouse-csv"]).toContain(input.format);
  return importServiceDump({ reads: store, commit: (ops) => store.write(ops) }, input.text, input.format as "clickhouse-csv", { normalize: NORMALIZE, zone, at: T0 + DAY_AFTER, runChars });
}
const DAY_AFTER = 24 * HOUR;

async function everything(store: Store): Promise<Execution[]> {
  const rows: Execution[] = [];
  for await (const chunk of store.executionChunks({})) rows.push(...chunk);
  return rows.sort((a, b) => (a.executionId < b.executionId ? -1 : 1));
}

const byId = (all: Execution[], id: string) => all.find((e) => e.executionId === id)!;

/** What the scenario must come to, execution by execution. */
function expectScenario(all: Execution[]) {
  expect(all.map((e) => e.executionId)).toEqual(
    [R("a1"), R("a2"), R("a7"), R("a8"), R("a9"), R("aa"), R("ab"), R("b1"), R("c1"), R("d1"), R("e1"), R("f1")].sort(),
  );
  const failed = byId(all, R("a1"));
  expect(failed).toMatchObject({
    randomId: R("a1"), attempt: 1, kind: "install", payloadVersion: 2, type: "lxc", nsapp: "jellyfin", status: "failed", outcome: "failed",
    exitCode: 100, errorCategory: "dependency", failedCommand: "apt-get install -y jellyfin", failedLine: 57, installDuration: 300,
    createdAt: T0, installingAt: T0, validationAt: T0 + 10 * S, configuringAt: T0 + MIN, finishedAt: T0 + 5 * MIN, durationMs: 5 * MIN, updatedAt: T0 + 5 * MIN,
    // The minimal ping's defaults ('' and 0, vendors "unknown") did not wipe what the full reports said.
    ctType: 1, diskSize: 8, coreCount: 2, ramSize: 2048, osType: "debian", osVersion: "12", pveVersion: "8.4.1", method: "default",
    cpuVendor: "amd", cpuModel: "AMD Ryzen 7 5800X", gpuVendor: "intel", gpuModel: "Intel UHD Graphics 770", gpuPassthrough: "yes", hostGpu: null,
    ramSpeed: "3200", arch: "amd64", platform: "pve", hasArm: false, repoSource: "ProxmoxVE", repoSlug: "community-scripts/ProxmoxVE",
    kernelVersion: "6.8.12-4-pve", appVersion: null, extra: null, repaired: false,
  });
  expect(failed.error).toBe(kept(NASTY));
  expect(failed.error!.length).toBeGreaterThan(90_000);
  expect(byId(all, R("a2"))).toMatchObject({ randomId: R("a1"), attempt: 2, status: "success", outcome: "success", exitCode: 0, error: null, durationMs: 5 * MIN, appVersion: "10.10.3", installDuration: 290 });
  expect(byId(all, R("b1"))).toMatchObject({ type: "vm", ctType: 2, osType: null, status: "aborted", outcome: "aborted", exitCode: 130, errorCategory: "user_aborted", durationMs: MIN });
  expect(byId(all, R("c1"))).toMatchObject({ payloadVersion: 1, gpuPassthrough: null, hostGpu: "igpu", hasArm: null, platform: null, arch: null, outcome: "success", exitCode: 0, durationMs: 3 * MIN });
  // The cleanup's row times the run out as the stuck-install job does: outcome unknown, the last step kept.
  expect(byId(all, R("d1"))).toMatchObject({ nsapp: "nextcloud", status: "configuring", outcome: "unknown", error: null, errorCategory: null, finishedAt: null, durationMs: null, configuringAt: T0 + 42 * MIN, updatedAt: T0 + 3 * HOUR, diskSize: 8 });
  expect(byId(all, R("e1"))).toMatchObject({ kind: "tool", type: "pve", outcome: "success", ctType: null, diskSize: null, durationMs: null, createdAt: T0 + 50 * MIN });
  expect(byId(all, R("f1"))).toMatchObject({ kind: "addon", outcome: "success" });
  expect(byId(all, R("a7"))).toMatchObject({ status: "unknown", outcome: "unknown", exitCode: 1, error: "exit_code=1 | General error", errorCategory: "unknown", durationMs: 2 * MIN });
  expect(byId(all, R("a8"))).toMatchObject({ randomId: R("a8"), attempt: 1, payloadVersion: 1, status: "failed", exitCode: 1, error: "exit code 1", durationMs: MIN });
  expect(byId(all, R("a9"))).toMatchObject({ status: "failed", exitCode: 1, error: "exit_code=1 | x", finishedAt: T0 + 81 * MIN });
  expect(byId(all, R("aa"))).toMatchObject({ status: "failed", outcome: "failed", exitCode: 6, errorCategory: "network", durationMs: null });
  expect(byId(all, R("ab"))).toMatchObject({ status: "installing", outcome: "in_progress", finishedAt: null });
}

function expectSummary(s: DumpSummary, format: string) {
  expect(s).toMatchObject({ format, rows: DUMP_ROWS.length, duplicateRows: 2, executions: 12 });
  expect(s.refused).toEqual({ "invalid_field: type": 1, "invalid_field: random_id": 1, "invalid_field: created": 1, "already_final: status": 1 });
}

let reference: Execution[] | null = null;

function engineTests(name: string, location: () => Promise<string>) {
  describe(`import of a telemetry-service dump (${name})`, () => {
    const opened: Engine[] = [];
    afterAll(async () => {
      for (const e of opened) await e.close();
    });
    const open = async () => {
      const engine = await openEngine(await location(), { durability: "normal", migrate: true, create: true });
      opened.push(engine);
      return engine.store;
    };

    for (const dump of DUMPS) {
      test(`${dump.name}: every run as its rows say; again = nothing changes; refusals logged once; verify clean`, async () => {
        const store = await open();
        const data = dump.data();
        // A small sort bound: the rows go through runs on disk and a merge, as a large dump's do.
        const first = await runImport(store, data, dump.zone, 20_000);
        expectSummary(first, dump.name.startsWith("CSV") ? "clickhouse-csv" : "clickhouse-jsoneachrow");
        expect(first).toMatchObject({ imported: 12, updated: 0, alreadyThere: 0, rejectedLog: { kept: 4, alreadyThere: 0, dropped: 0 } });
        const all = await everything(store);
        expectScenario(all);
        // Every form of the dump gives the same executions, field for field, on every engine.
        if (reference === null) reference = all;
        else expect(all).toEqual(reference);
        const log = await store.listRejected({ limit: 100 });
        expect(log.map((e) => e.reason).sort()).toEqual(["already_final", "invalid_field", "invalid_field", "invalid_field"]);
        const conflict = log.find((e) => e.reason === "already_final")!;
        expect(conflict.randomId).toBe(R("a9"));
        expect(JSON.parse(new TextDecoder().decode(conflict.body))).toMatchObject({ status: "success", random_id: R("a9") });
        const budgets = await store.budgets();

        const again = await runImport(store, data, dump.zone);
        expectSummary(again, first.format);
        expect(again).toMatchObject({ imported: 0, updated: 0, alreadyThere: 12, rejectedLog: { kept: 0, alreadyThere: 4, dropped: 0 } });
        expect(await everything(store)).toEqual(all);
        expect(await store.budgets()).toEqual(budgets);
        const check = await verifyRollups(store);
        expect(check).toMatchObject({ ok: true, records: 12 });
      });
    }

    test("v1-era rows (the table before the v2 columns): read with defaults for what they lack", async () => {
      const store = await open();
      const rows = [
        full({ random_id: R("1"), execution_id: R("1"), payload_version: 0, status: "installing", created: T0 }),
        full({ random_id: R("1"), execution_id: R("1"), payload_version: 0, status: "failed", exit_code: 1, error: "exit code 1: x", error_category: "shell", created: T0 + MIN }),
      ];
      for (const data of [jsonEachRow(rows, { columns: V1_COLUMNS }), csvWithNames(rows, { columns: V1_COLUMNS })]) {
        await runImport(store, data, "UTC");
      }
      const [e] = await store.getExecutions(R("1"));
      expect(e).toMatchObject({ payloadVersion: 1, status: "failed", exitCode: 1, durationMs: MIN, platform: null, arch: null, kernelVersion: null, failedLine: null, hostGpu: "yes", gpuPassthrough: null, repoSlug: "community-scripts/ProxmoxVE" });
      expect((await verifyRollups(store)).ok).toBe(true);
    });

    test("a later dump brings runs that were going to their end, and adds what is new", async () => {
      const store = await open();
      const id = R("77");
      const start = full({ random_id: id, execution_id: id, status: "installing", created: T0 });
      const s1 = await runImport(store, jsonEachRow([start]), "UTC");
      expect(s1).toMatchObject({ imported: 1 });
      expect((await store.getExecutions(id))[0]).toMatchObject({ outcome: "in_progress" });
      const end = full({ random_id: id, execution_id: id, status: "failed", exit_code: 100, error: "exit_code=100 | E: x", error_category: "dependency", created: T0 + 2 * MIN });
      const retry = full({ random_id: id, execution_id: R("78"), status: "success", exit_code: 0, created: T0 + 5 * MIN });
      const s2 = await runImport(store, jsonEachRow([start, end, full({ ...retry, status: "installing", created: T0 + 3 * MIN }), retry]), "UTC");
      expect(s2).toMatchObject({ imported: 1, updated: 1, alreadyThere: 0 });
      const [first, second] = await store.getExecutions(id);
      expect(first).toMatchObject({ attempt: 1, outcome: "failed", exitCode: 100, durationMs: 2 * MIN, finishedAt: T0 + 2 * MIN });
      expect(second).toMatchObject({ attempt: 2, outcome: "success", durationMs: 2 * MIN });
      expect((await verifyRollups(store)).ok).toBe(true);
    });

    test("invalid UTF-8 in a CSV dump (ClickHouse writes bytes as stored) becomes U+FFFD, as ingestion reads it", async () => {
      const store = await open();
      const id = R("99");
      const bad = new Uint8Array([...encoder.encode("exit_code=1 | caf"), 0xc3, 0x28, ...encoder.encode(" done")]);
      await runImport(store, csvWithNames([full({ random_id: id, execution_id: id, type: "pve", nsapp: "t", status: "failed", exit_code: 1, error: bad, created: T0 })]), "UTC");
      expect((await store.getExecutions(id))[0]!.error).toBe("exit_code=1 | caf\ufffd( done");
    });
  });
}

engineTests("sqlite", async () => ":memory:");

let pg: PgServer | undefined;
let admin: postgres.Sql | undefined;
let dbs = 0;
beforeAll(async () => {
  pg = await startPostgres();
  admin = postgres(pg.url, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await admin?.end();
  await pg?.stop();
});
engineTests("postgres", () => createDatabase(pg!, `ts_import_${++dbs}`));
