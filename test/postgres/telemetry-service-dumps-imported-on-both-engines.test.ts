// Import of the community telemetry service's table (issue 26): dumps built from its schema as
// clickhouse-client writes them (JSONEachRow, CSVWithNames; its default times in the server's
// zone, ISO times, quoted numbers; v1-era rows without the v2 columns), with every status,
// retries, the stuck-install cleanup's `unknown` rows, rows before execution ids, whole-row
// duplicates, two final rows of one run, rows out of order, bad rows and long nasty error texts.
// On both engines: the same executions from every form of the dump, an import run again changes
// nothing, refusals are kept in the rejected-reports log once, and the rollups equal a recount.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { defaults } from "../../src/config.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import type { Store } from "../../src/store/contract/store.ts";
import type { Engine } from "../../src/store/engine.ts";
import { openEngine } from "../../src/store/open.ts";
import { sniff } from "../../src/transfer/input-format.ts";
import { importServiceDump, type DumpSummary } from "../../src/transfer/telemetry-service-dump.ts";
import { postgresForFile } from "../helpers/postgres.ts";
import { NASTY, R, V1_COLUMNS, kept, csvWithNames, full, jsonEachRow, scenario } from "../helpers/telemetry-service.ts";

setDefaultTimeout(60_000);

const NORMALIZE = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };
const T0 = Date.parse("2026-05-01T08:00:00.250Z");
const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;

const ROWS = scenario(T0);
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
  {
    name: "JSONEachRow, ISO times, numbers quoted",
    data: () => jsonEachRow(DUMP_ROWS, { timeFormat: "iso", quoteNumbers: true }),
    zone: "America/New_York",
  },
  {
    name: "CSVWithNames, server in Europe/Berlin",
    data: () => csvWithNames(DUMP_ROWS, { zone: "Europe/Berlin" }),
    zone: "Europe/Berlin",
  },
];

async function runImport(
  store: Store,
  data: string | Uint8Array,
  zone: string,
  runChars?: number,
): Promise<DumpSummary> {
  const input = await sniff(chunked(data));
  expect(["clickhouse-jsoneachrow", "clickhouse-csv"]).toContain(input.format);
  return importServiceDump(
    { reads: store, commit: (ops) => store.write(ops) },
    input.text,
    input.format as "clickhouse-csv",
    { normalize: NORMALIZE, zone, at: T0 + DAY_AFTER, runChars },
  );
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
    randomId: R("a1"),
    attempt: 1,
    kind: "install",
    payloadVersion: 2,
    type: "lxc",
    nsapp: "jellyfin",
    status: "failed",
    outcome: "failed",
    exitCode: 100,
    errorCategory: "dependency",
    failedCommand: "apt-get install -y jellyfin",
    failedLine: 57,
    installDuration: 300,
    createdAt: T0,
    installingAt: T0,
    validationAt: T0 + 10 * S,
    configuringAt: T0 + MIN,
    finishedAt: T0 + 5 * MIN,
    durationMs: 5 * MIN,
    updatedAt: T0 + 5 * MIN,
    // The minimal ping's defaults ('' and 0, vendors "unknown") did not wipe what the full reports said.
    ctType: 1,
    diskSize: 8,
    coreCount: 2,
    ramSize: 2048,
    osType: "debian",
    osVersion: "12",
    pveVersion: "8.4.1",
    method: "default",
    cpuVendor: "amd",
    cpuModel: "AMD Ryzen 7 5800X",
    gpuVendor: "intel",
    gpuModel: "Intel UHD Graphics 770",
    gpuPassthrough: "yes",
    hostGpu: null,
    ramSpeed: "3200",
    arch: "amd64",
    platform: "pve",
    hasArm: false,
    repoSource: "ProxmoxVE",
    repoSlug: "community-scripts/ProxmoxVE",
    kernelVersion: "6.8.12-4-pve",
    appVersion: null,
    extra: null,
    repaired: false,
  });
  expect(failed.error).toBe(kept(NASTY));
  expect(failed.error!.length).toBeGreaterThan(90_000);
  expect(byId(all, R("a2"))).toMatchObject({
    randomId: R("a1"),
    attempt: 2,
    status: "success",
    outcome: "success",
    exitCode: 0,
    error: null,
    durationMs: 5 * MIN,
    appVersion: "10.10.3",
    installDuration: 290,
  });
  expect(byId(all, R("b1"))).toMatchObject({
    type: "vm",
    ctType: 2,
    osType: null,
    status: "aborted",
    outcome: "aborted",
    exitCode: 130,
    errorCategory: "user_aborted",
    durationMs: MIN,
  });
  expect(byId(all, R("c1"))).toMatchObject({
    payloadVersion: 1,
    gpuPassthrough: null,
    hostGpu: "igpu",
    hasArm: null,
    platform: null,
    arch: null,
    outcome: "success",
    exitCode: 0,
    durationMs: 3 * MIN,
  });
  // The cleanup's row times the run out as the stuck-install job does: outcome unknown, the last step kept.
  expect(byId(all, R("d1"))).toMatchObject({
    nsapp: "nextcloud",
    status: "configuring",
    outcome: "unknown",
    error: null,
    errorCategory: null,
    finishedAt: null,
    durationMs: null,
    configuringAt: T0 + 42 * MIN,
    updatedAt: T0 + 3 * HOUR,
    diskSize: 8,
  });
  expect(byId(all, R("e1"))).toMatchObject({
    kind: "tool",
    type: "pve",
    outcome: "success",
    ctType: null,
    diskSize: null,
    durationMs: null,
    createdAt: T0 + 50 * MIN,
  });
  expect(byId(all, R("f1"))).toMatchObject({ kind: "addon", outcome: "success" });
  expect(byId(all, R("a7"))).toMatchObject({
    status: "unknown",
    outcome: "unknown",
    exitCode: 1,
    error: "exit_code=1 | General error",
    errorCategory: "unknown",
    durationMs: 2 * MIN,
  });
  expect(byId(all, R("a8"))).toMatchObject({
    randomId: R("a8"),
    attempt: 1,
    payloadVersion: 1,
    status: "failed",
    exitCode: 1,
    error: "exit code 1",
    durationMs: MIN,
  });
  expect(byId(all, R("a9"))).toMatchObject({
    status: "failed",
    exitCode: 1,
    error: "exit_code=1 | x",
    finishedAt: T0 + 81 * MIN,
  });
  expect(byId(all, R("aa"))).toMatchObject({
    status: "failed",
    outcome: "failed",
    exitCode: 6,
    errorCategory: "network",
    durationMs: null,
  });
  expect(byId(all, R("ab"))).toMatchObject({ status: "installing", outcome: "in_progress", finishedAt: null });
}

function expectSummary(s: DumpSummary, format: string) {
  expect(s).toMatchObject({ format, rows: DUMP_ROWS.length, duplicateRows: 2, executions: 12 });
  expect(s.refused).toEqual({
    "invalid_field: type": 1,
    "invalid_field: random_id": 1,
    "invalid_field: created": 1,
    "already_final: status": 1,
  });
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
        expect(first).toMatchObject({
          imported: 12,
          updated: 0,
          alreadyThere: 0,
          rejectedLog: { kept: 4, alreadyThere: 0, dropped: 0 },
        });
        const all = await everything(store);
        expectScenario(all);
        // Every form of the dump gives the same executions, field for field, on every engine.
        if (reference === null) reference = all;
        else expect(all).toEqual(reference);
        const log = await store.listRejected({ limit: 100 });
        expect(log.map((e) => e.reason).sort()).toEqual([
          "already_final",
          "invalid_field",
          "invalid_field",
          "invalid_field",
        ]);
        const conflict = log.find((e) => e.reason === "already_final")!;
        expect(conflict.randomId).toBe(R("a9"));
        expect(JSON.parse(new TextDecoder().decode(conflict.body))).toMatchObject({
          status: "success",
          random_id: R("a9"),
        });
        const budgets = await store.budgets();

        const again = await runImport(store, data, dump.zone);
        expectSummary(again, first.format);
        expect(again).toMatchObject({
          imported: 0,
          updated: 0,
          alreadyThere: 12,
          rejectedLog: { kept: 0, alreadyThere: 4, dropped: 0 },
        });
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
        full({
          random_id: R("1"),
          execution_id: R("1"),
          payload_version: 0,
          status: "failed",
          exit_code: 1,
          error: "exit code 1: x",
          error_category: "shell",
          created: T0 + MIN,
        }),
      ];
      for (const data of [jsonEachRow(rows, { columns: V1_COLUMNS }), csvWithNames(rows, { columns: V1_COLUMNS })]) {
        await runImport(store, data, "UTC");
      }
      const [e] = await store.getExecutions(R("1"));
      expect(e).toMatchObject({
        payloadVersion: 1,
        status: "failed",
        exitCode: 1,
        durationMs: MIN,
        platform: null,
        arch: null,
        kernelVersion: null,
        failedLine: null,
        hostGpu: "yes",
        gpuPassthrough: null,
        repoSlug: "community-scripts/ProxmoxVE",
      });
      expect((await verifyRollups(store)).ok).toBe(true);
    });

    test("a later dump brings runs that were going to their end, and adds what is new", async () => {
      const store = await open();
      const id = R("77");
      const start = full({ random_id: id, execution_id: id, status: "installing", created: T0 });
      const s1 = await runImport(store, jsonEachRow([start]), "UTC");
      expect(s1).toMatchObject({ imported: 1 });
      expect((await store.getExecutions(id))[0]).toMatchObject({ outcome: "in_progress" });
      const end = full({
        random_id: id,
        execution_id: id,
        status: "failed",
        exit_code: 100,
        error: "exit_code=100 | E: x",
        error_category: "dependency",
        created: T0 + 2 * MIN,
      });
      const retry = full({
        random_id: id,
        execution_id: R("78"),
        status: "success",
        exit_code: 0,
        created: T0 + 5 * MIN,
      });
      const s2 = await runImport(
        store,
        jsonEachRow([start, end, full({ ...retry, status: "installing", created: T0 + 3 * MIN }), retry]),
        "UTC",
      );
      expect(s2).toMatchObject({ imported: 1, updated: 1, alreadyThere: 0 });
      const [first, second] = await store.getExecutions(id);
      expect(first).toMatchObject({
        attempt: 1,
        outcome: "failed",
        exitCode: 100,
        durationMs: 2 * MIN,
        finishedAt: T0 + 2 * MIN,
      });
      expect(second).toMatchObject({ attempt: 2, outcome: "success", durationMs: 2 * MIN });
      expect((await verifyRollups(store)).ok).toBe(true);
    });

    test("invalid UTF-8 in a CSV dump (ClickHouse writes bytes as stored) becomes U+FFFD, as ingestion reads it", async () => {
      const store = await open();
      const id = R("99");
      const bad = new Uint8Array([...encoder.encode("exit_code=1 | caf"), 0xc3, 0x28, ...encoder.encode(" done")]);
      await runImport(
        store,
        csvWithNames([
          full({
            random_id: id,
            execution_id: id,
            type: "pve",
            nsapp: "t",
            status: "failed",
            exit_code: 1,
            error: bad,
            created: T0,
          }),
        ]),
        "UTC",
      );
      expect((await store.getExecutions(id))[0]!.error).toBe("exit_code=1 | caf\ufffd( done");
    });
  });
}

engineTests("sqlite", async () => ":memory:");

const pg = postgresForFile();
engineTests("postgres", () => pg.database());

describe("the input's format, from its first line", () => {
  const formatOf = async (text: string) => (await sniff(chunked(text, 3))).format;
  test("our NDJSON, the original API's array, the service's JSONEachRow and CSVWithNames; BOM and blank lines before them", async () => {
    expect(await formatOf('{"random_id":"a","created_at":"2026-05-01T00:00:00Z","status":"done"}\n')).toBe("ndjson");
    expect(await formatOf('\ufeff\n\n  [{"random_id":"a"}]')).toBe("json-array");
    expect(
      await formatOf('{"id":"x","random_id":"a","status":"installing","created":"2026-05-01 00:00:00.000"}\n'),
    ).toBe("clickhouse-jsoneachrow");
    expect(await formatOf('\ufeff{"random_id":"a","status":"installing","created":"2026-05-01 00:00:00.000"}')).toBe(
      "clickhouse-jsoneachrow",
    );
    expect(
      await formatOf(
        '"id","nsapp","status","created","random_id"\n"x","a","installing","2026-05-01 00:00:00.000","r"\n',
      ),
    ).toBe("clickhouse-csv");
    expect(await formatOf("id,random_id,status,created\n")).toBe("clickhouse-csv");
    expect(await formatOf("")).toBe("ndjson");
    expect(await formatOf("{broken\n")).toBe("ndjson"); // reported line by line by the NDJSON reader
    await expect(formatOf("hello,world\n")).rejects.toThrow("the input is none of the formats import reads");
  });
});
