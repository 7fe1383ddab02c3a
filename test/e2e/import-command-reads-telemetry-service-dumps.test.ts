// `installstats import` of the community telemetry service's data through the compiled binary
// (issue 26): a JSONEachRow dump and the same dump as CSVWithNames from a server in another time
// zone give the same data; the summary line says what came of every row; run again, nothing new
// (exit 1, as import does when nothing was imported); verify is clean. Then `import --url` from
// a running installstats serving that data gives the same records through /api/records, and
// mistakes are one line each.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { csvWithNames, jsonEachRow, scenario } from "../helpers/telemetry-service.ts";

setDefaultTimeout(120_000);

// Within the 365 days /api/records serves, whenever the test runs.
const T0 = Date.now() - 30 * 24 * 3600_000 - (Date.now() % 1000) + 250;
let bin = "";
let dir = "";
const servers: RunningServer[] = [];

beforeAll(async () => {
  bin = await compiledBinary();
  dir = tempDir("installstats-import-ts-");
  const rows = scenario(T0);
  writeFileSync(join(dir, "dump.json"), jsonEachRow([...rows, rows[3]!]));
  writeFileSync(join(dir, "dump.csv"), csvWithNames([...rows, rows[3]!], { zone: "Asia/Kolkata" }));
});
afterAll(async () => {
  for (const s of servers) if (s.proc.exitCode === null) await s.stop();
});

const run = (...args: string[]) => {
  const r = Bun.spawnSync([bin, ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", TMPDIR: dir },
  });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};

async function records(url: string) {
  const out: Record<string, unknown>[] = [];
  for (let page = 1; ; page++) {
    const body = (await (
      await fetch(`${url}/api/records?days=0&repo=all&sort=created&limit=100&page=${page}`)
    ).json()) as { records: Record<string, unknown>[] };
    out.push(...body.records);
    if (body.records.length < 100) break;
  }
  const key = (r: Record<string, unknown>) => `${String(r.created)} ${String(r.execution_id)}`;
  return out.sort((a, b) => (key(a) < key(b) ? -1 : 1));
}

describe("installstats import of the telemetry service's data (binary)", () => {
  test("a JSONEachRow dump: the summary line, one line per refused row; again: nothing new, exit 1; verify clean", () => {
    const db = join(dir, "json.db");
    const first = run("import", join(dir, "dump.json"), "--db", db);
    expect(first.code).toBe(0);
    const summary = JSON.parse(first.out);
    expect(summary).toEqual({
      format: "clickhouse-jsoneachrow",
      rows: 29,
      duplicate_rows: 1,
      executions: 12,
      imported: 12,
      updated: 0,
      already_there: 0,
      rejected_log: { kept: 4, already_there: 0, no_room: 0 },
      refused: 4,
      refused_by_reason: {
        "invalid_field: type": 1,
        "invalid_field: random_id": 1,
        "invalid_field: created": 1,
        "already_final: status": 1,
      },
    });
    const lines = first.err.trim().split("\n");
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).toMatch(/^installstats import: line \d+: /);
    expect(first.err).toContain('type must be one of lxc, vm, turnkey, pve, addon, tool, got "bogus"');

    const again = run("import", join(dir, "dump.json"), "--db", db);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.out)).toMatchObject({
      imported: 0,
      already_there: 12,
      rejected_log: { kept: 0, already_there: 4 },
    });
    expect(again.err.trim().split("\n").at(-1)).toBe(
      "installstats import: nothing imported: all 12 runs of its 29 rows are in the database already",
    );

    const verify = run("verify", "--db", db);
    expect(verify.code).toBe(0);
    const rejected = run("rejected", "--db", db);
    expect(rejected.code).toBe(0);
    expect(rejected.out).toContain("telemetry-service dump, line");
  });

  test("the same dump as CSVWithNames from a server in Asia/Kolkata (--time-zone) gives the same data", () => {
    const db = join(dir, "csv.db");
    const wrongZone = run("import", join(dir, "dump.csv"), "--db", db, "--time-zone", "Mars/Olympus");
    expect(wrongZone.code).toBe(2);
    expect(wrongZone.err.trim().split("\n")).toHaveLength(1);
    expect(wrongZone.err).toContain('--time-zone "Mars/Olympus" is not a time zone');
    const csv = run("import", join(dir, "dump.csv"), "--db", db, "--time-zone", "Asia/Kolkata");
    expect(csv.code).toBe(0);
    expect(JSON.parse(csv.out)).toMatchObject({ format: "clickhouse-csv", rows: 29, executions: 12, imported: 12 });
    const exported = (file: string) => run("export", "--db", join(dir, file), "--format", "ndjson").out;
    expect(exported("csv.db")).toBe(exported("json.db"));
    expect(exported("csv.db").trim().split("\n")).toHaveLength(12);
  });

  test("import --url from a running installstats: the same records; again: nothing new, exit 0; mistakes are one line", async () => {
    const source = await startServer(bin, ["--db", join(dir, "json.db")]);
    servers.push(source);
    const db = join(dir, "from-url.db");
    const first = run("import", "--url", source.url, "--db", db);
    expect(first.code).toBe(0);
    const summary = JSON.parse(first.out);
    expect(summary).toMatchObject({
      format: "telemetry-service-api",
      source: source.url,
      resumed_after: null,
      records: 12,
      imported: 12,
      refused: 0,
    });
    const again = run("import", "--url", source.url, "--db", db);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.out)).toMatchObject({ imported: 0, updated: 0 });
    expect(run("verify", "--db", db).code).toBe(0);
    const target = await startServer(bin, ["--db", db]);
    servers.push(target);
    expect(await records(target.url)).toEqual(await records(source.url));

    const down = run("import", "--url", "http://127.0.0.1:9", "--retries", "1", "--db", db);
    expect(down.code).toBe(1);
    expect(down.err.trim().split("\n")).toHaveLength(1);
    expect(down.err).toStartWith("installstats: http://127.0.0.1:9 did not answer after 1 attempt (last: ");
    const both = run("import", "--url", source.url, join(dir, "dump.json"), "--db", db);
    expect(both.code).toBe(2);
    expect(both.err.trim()).toBe(
      "installstats: import takes a file or --url, not both: installstats import --url http://host:port",
    );
    const stray = run("import", join(dir, "dump.json"), "--from-start", "--db", db);
    expect(stray.code).toBe(2);
  });
});
