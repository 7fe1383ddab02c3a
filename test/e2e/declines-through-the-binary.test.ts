// The newest engine's behaviour against the compiled binary (scripts/client.sh --protocol v2 as
// core sends it after a495a11), beside ProxmoxVE's v1 client and the old /upload client: a user's
// decline is an abort whatever sent it, a run the host refused is blocked, 199 is kept as sent, an update run sends no final report,
// a final report without its start is held, runs the engine attributes to itself say ProxmoxVED.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { client, compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(120_000);

let server: RunningServer | undefined;
let db = "";
afterAll(async () => {
  if (server?.proc.exitCode === null) await server.stop();
});

const get = async (path: string, status = 200) => {
  const res = await fetch(`${server!.url}${path}`);
  expect(res.status, path).toBe(status);
  return (await res.json()) as Record<string, unknown>;
};

describe("declines, 199 and update runs, through the binary", () => {
  let lines: Record<string, string[]> = {};

  beforeAll(async () => {
    const bin = await compiledBinary();
    db = join(tempDir("installstats-e2e-declines-"), "data.db");
    server = await startServer(bin, ["--db", db]);
    const u = server.url;
    const quick = ["--retry-sleep", "0", "--pings", "1"];
    lines = {
      v2decline: await client(u, [
        "--protocol",
        "v2",
        "--id",
        "v2-254",
        ...quick,
        "--app",
        "immich",
        "install",
        "failed",
        "254",
      ]),
      v2retry: await client(u, [
        "--protocol",
        "v2",
        "--id",
        "v2-113",
        ...quick,
        "--retries",
        "1",
        "--app",
        "immich",
        "install",
        "failed",
        "113",
      ]),
      v1decline: await client(u, [
        "--protocol",
        "v1",
        "--id",
        "v1-122",
        ...quick,
        "--app",
        "immich",
        "install",
        "failed",
        "122",
      ]),
      upload: await client(u, ["--id", "up-253", "--app", "immich", "install", "failed", "exit code 253"]),
      v2nocode: await client(u, [
        "--protocol",
        "v2",
        "--id",
        "v2-199",
        ...quick,
        "--app",
        "immich",
        "install",
        "failed",
      ]),
      v2signal: await client(u, [
        "--protocol",
        "v2",
        "--id",
        "v2-130",
        ...quick,
        "--app",
        "immich",
        "install",
        "failed",
        "130",
      ]),
      // Blocked by the host before the script ran (docs/decisions/2026-11-27-blocked-adopted.md), and
      // the old client's SIGTERM trap: on another app, so immich's counts stay as they are.
      v1blocked: await client(u, [
        "--protocol",
        "v1",
        "--id",
        "v1-214",
        ...quick,
        "--app",
        "jellyfin",
        "install",
        "failed",
        "214",
      ]),
      uploadTerm: await client(u, ["--id", "up-term", "--app", "jellyfin", "install", "failed", "TERMINATED"]),
      // An update run: the engine never attempted a start, so it reports no ending.
      v2update: await client(u, [
        "--protocol",
        "v2",
        "--id",
        "v2-update",
        "--retry-sleep",
        "0",
        "final",
        "failed",
        "100",
      ]),
      // ProxmoxVE's v1 client does send it: a final report with no start, held.
      v1orphan: await client(u, [
        "--protocol",
        "v1",
        "--id",
        "v1-orphan",
        "--retry-sleep",
        "0",
        "--app",
        "immich",
        "final",
        "failed",
        "254",
      ]),
    };
    expect(await server.stop("SIGTERM")).toBe(0);
    server = await startServer(bin, ["--db", db]);
  });

  test("what each client sent, as it prints it", () => {
    expect(lines.v2decline!.at(-1)).toBe("telemetry aborted 200");
    expect(lines.v2retry!.filter((l) => l.startsWith("telemetry aborted"))).toHaveLength(1);
    // the retry before it failed with 1 (a decline is not retried as a decline)
    expect(lines.v2retry!.filter((l) => l.startsWith("telemetry failed"))).toHaveLength(1);
    expect(lines.v1decline!.at(-1)).toBe("telemetry failed 200");
    expect(lines.upload).toEqual(["upload 201", "updatestatus 200"]);
    expect(lines.v2nocode!.at(-1)).toBe("telemetry failed 200");
    expect(lines.v2update).toEqual([]);
    expect(lines.v1orphan).toEqual(["telemetry failed 202"]);
  });

  test("a decline is an abort by the user, from the newest engine, from v1, from /upload", async () => {
    expect(await get("/api/installs/v2-254")).toMatchObject({
      status: "aborted",
      outcome: "aborted",
      exit_code: 254,
      error_category: "user_aborted",
      payload_version: 2,
    });
    expect(await get("/api/installs/v1-122")).toMatchObject({
      status: "failed",
      outcome: "aborted",
      exit_code: 122,
      error_category: "user_aborted",
      payload_version: 1,
    });
    expect(await get("/api/installs/up-253")).toMatchObject({
      status: "failed",
      outcome: "aborted",
      exit_code: 253,
      error_category: "user_aborted",
      payload_version: null,
    });
    const retried = (await get("/api/installs/v2-113")).executions as Record<string, unknown>[];
    expect(retried.map((e) => [e.attempt, e.outcome, e.exit_code])).toEqual([
      [1, "failed", 1],
      [2, "aborted", 113],
    ]);
  });

  test("a failure raised before the script ran is blocked (category kept); SIGTERM's TERMINATED is an abort", async () => {
    expect(lines.v1blocked!.at(-1)).toBe("telemetry failed 200");
    expect(await get("/api/installs/v1-214")).toMatchObject({
      status: "failed",
      outcome: "blocked",
      exit_code: 214,
      error_category: "storage",
    });
    expect(lines.uploadTerm).toEqual(["upload 201", "updatestatus 200"]);
    expect(await get("/api/installs/up-term")).toMatchObject({
      status: "failed",
      outcome: "aborted",
      exit_code: 143,
      error_category: "user_aborted",
    });
    const s = await get("/api/stats/summary?days=1&nsapp=jellyfin");
    expect(s).toMatchObject({ total: 2, failed: 0, blocked: 1, aborted: 1, success_rate: null });
  });

  test("199 (the engine was given no exit code) is kept as sent: a failure of unknown cause", async () => {
    const r = await get("/api/installs/v2-199");
    expect(r).toMatchObject({ status: "failed", outcome: "failed", exit_code: 199, error_category: "unknown" });
    expect(r.error as string).toStartWith("exit_code=199 | Engine: ");
  });

  test("engine-only runs are attributed to ProxmoxVED", async () => {
    expect(await get("/api/installs/v2-254")).toMatchObject({
      repo_source: "ProxmoxVED",
      repo_slug: "community-scripts/ProxmoxVED",
    });
    expect(await get("/api/installs/v1-122")).toMatchObject({ repo_source: "ProxmoxVE" });
  });

  test("an update run leaves nothing; a final report without its start is held, then applied as an abort", async () => {
    await get("/api/installs/v2-update", 404);
    await get("/api/installs/v1-orphan", 404);
    const start = await client(server!.url, [
      "--protocol",
      "v1",
      "--id",
      "v1-orphan",
      "--retry-sleep",
      "0",
      "--app",
      "immich",
      "start",
    ]);
    expect(start).toEqual(["telemetry installing 201"]);
    expect(await get("/api/installs/v1-orphan")).toMatchObject({
      status: "failed",
      outcome: "aborted",
      exit_code: 254,
      error_category: "user_aborted",
      duration_s: null,
    });
  });

  test("aggregates count them as aborts: out of the failure rate, in user_aborted", async () => {
    const s = await get("/api/stats/summary?days=1&nsapp=immich");
    // failed: v2-113's first attempt (1), v2-199; aborted: 254, 113, 122, 253, 130, the orphan 254
    expect(s).toMatchObject({ total: 8, failed: 2, aborted: 6, success: 0 });
    const categories = (await get("/api/stats/breakdown?days=1&by=error_category&nsapp=immich")) as {
      groups: { value: string | null; aborted: number; failed: number }[];
    };
    expect(categories.groups.find((g) => g.value === "user_aborted")).toMatchObject({ aborted: 6, failed: 0 });
  });

  test("the community's newest dashboard and the original API's readers see the same runs", async () => {
    const page = await get("/api/new?days=1");
    expect(page.top_apps).toContainEqual({
      label: "immich",
      runs: 8,
      success: 0,
      failed: 2,
      blocked: 0,
      aborted: 6,
      unfinished: 0,
    });
    expect(page.top_apps).toContainEqual({
      label: "jellyfin",
      runs: 2,
      success: 0,
      failed: 0,
      blocked: 1,
      aborted: 1,
      unfinished: 0,
    });
    expect(page.categories).not.toContainEqual(expect.objectContaining({ label: "user_aborted" }));
    // failures and blocked runs (jellyfin's 214), no abort
    expect((page.exit_codes as { code: number }[]).map((e) => e.code).sort((a, b) => a - b)).toEqual([1, 199, 214]);
    // The original's words: every decline and abort is "failed" there, as the old client sent them.
    const summary = await get("/data/summary");
    expect(summary.status_count).toEqual({ failed: 10 });
    expect((await get("/healthz")).time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  });

  test("verify is clean after all of it", async () => {
    await server!.stop("SIGTERM");
    const proc = Bun.spawn([await compiledBinary(), "verify", "--db", db], { stdout: "pipe", stderr: "pipe" });
    const out = await new Response(proc.stdout).text();
    expect(await proc.exited, out).toBe(0);
  });
});
