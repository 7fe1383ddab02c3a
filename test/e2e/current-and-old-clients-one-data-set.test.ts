// Today's clients against the compiled binary: scripts/client.sh sends what the community's
// /telemetry clients (payload v1 and v2) and the old /upload client send, interleaved into one
// data set; after a restart everything reads back field by field, and the aggregates agree.
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { join } from "node:path";
import { client, compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(120_000);

let server: RunningServer | undefined;
let db = "";
afterAll(async () => {
  if (server?.proc.exitCode === null) await server.stop();
});

const get = async (path: string) => {
  const res = await fetch(`${server!.url}${path}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown> & { executions: Record<string, unknown>[] };
};
const codes = (lines: string[]) => lines.map((l) => l.split(" ").at(-1));

describe("current and old clients, one data set, through the binary", () => {
  let lines: Record<string, string[]> = {};

  beforeAll(async () => {
    const bin = await compiledBinary();
    db = join(tempDir("installstats-e2e-telemetry-"), "data.db");
    server = await startServer(bin, ["--db", db]);
    const u = server.url;
    const quick = ["--retry-sleep", "0", "--pings", "2"];
    // Interleaved: each protocol's reports between the others'.
    lines = {
      v2retry: await client(u, [
        "--protocol",
        "v2",
        "--id",
        "v2-retry",
        ...quick,
        "--retries",
        "1",
        "--failed-command",
        "apt-get install -y foo",
        "--failed-line",
        "12",
        "--log-lines",
        "80",
        "--gpu-passthrough",
        "yes",
        "--repo-source",
        "external",
        "--repo-slug",
        "me/ProxmoxVE",
        "--app",
        "nginx",
        "install",
        "success",
      ]),
      upload: await client(u, ["--id", "up-1", "--app", "nginx", "install", "failed", "exit code 100: apt-get failed"]),
      v1: await client(u, [
        "--protocol",
        "v1",
        "--id",
        "v1-fail",
        ...quick,
        "--gpu-passthrough",
        "igpu",
        "--log-lines",
        "5",
        "--app",
        "nginx",
        "install",
        "failed",
        "127",
      ]),
      nojq: await client(u, [
        "--protocol",
        "v2",
        "--id",
        "v2-nojq",
        ...quick,
        "--no-jq",
        "--failed-command",
        'echo "x" > C:\\temp',
        "--app",
        "redis",
        "install",
        "failed",
        "1",
      ]),
      tool: await client(u, [
        "--protocol",
        "v2",
        "--retry-sleep",
        "0",
        "--id",
        "tool-1",
        "tool",
        "post-pve-install",
        "success",
      ]),
      addon: await client(u, [
        "--protocol",
        "v1",
        "--retry-sleep",
        "0",
        "--id",
        "addon-1",
        "addon",
        "netdata",
        "failed",
        "1",
      ]),
    };
    // Restart: what was acknowledged is read back from disk.
    expect(await server.stop("SIGTERM")).toBe(0);
    server = await startServer(bin, ["--db", db]);
  });

  test("every request was acknowledged 2xx", () => {
    for (const [name, out] of Object.entries(lines)) {
      expect(out.length, name).toBeGreaterThan(0);
      for (const code of codes(out)) expect(Number(code), `${name}: ${out.join(" / ")}`).toBeLessThan(300);
    }
  });

  test("a v2 install with a retry: two executions, the second rescued it, every field kept", async () => {
    const r = await get("/api/installs/v2-retry");
    expect(r.executions).toHaveLength(2);
    const [first, second] = r.executions as [Record<string, unknown>, Record<string, unknown>];
    expect(first).toMatchObject({
      execution_id: "v2-retry",
      attempt: 1,
      outcome: "failed",
      exit_code: 1,
      failed_command: "apt-get install -y foo",
      failed_line: 12,
      payload_version: 2,
      gpu_passthrough: "yes",
      host_gpu: null,
      repo_source: "external",
      repo_slug: "me/ProxmoxVE",
      nsapp: "nginx",
      kind: "install",
      platform: "pve",
      arch: "amd64",
    });
    expect(first.error as string).toStartWith(
      "exit_code=1 | General error | at line 12: apt-get install -y foo\n---\n",
    );
    expect((first.error as string).split("\n").length).toBeGreaterThan(50);
    expect(second).toMatchObject({
      random_id: "v2-retry",
      attempt: 2,
      outcome: "success",
      exit_code: 0,
      error_category: null,
    });
    expect(second.execution_id).not.toBe("v2-retry");
    const t = second.timeline as Record<string, string | null>;
    for (const key of ["installing", "validation", "configuring", "finished"]) expect(t[key], key).not.toBeNull();
    expect(Date.parse(t.installing!)).toBeLessThanOrEqual(Date.parse(t.validation!));
    expect(Date.parse(t.configuring!)).toBeLessThanOrEqual(Date.parse(t.finished!));
    expect(r.execution_id).toBe(second.execution_id); // the install reads as its latest execution
  });

  test("v1: the host's GPU kept apart from v2's passthrough; exit code and category", async () => {
    const r = await get("/api/installs/v1-fail");
    expect(r).toMatchObject({
      payload_version: 1,
      host_gpu: "igpu",
      gpu_passthrough: null,
      outcome: "failed",
      exit_code: 127,
      error_category: "dependency",
    });
  });

  test("/upload in the same data set: exit code parsed from the text, category derived", async () => {
    const r = await get("/api/installs/up-1");
    expect(r).toMatchObject({
      payload_version: null,
      execution_id: "up-1",
      outcome: "failed",
      exit_code: 100,
      error_category: "dependency",
      error: "exit code 100: apt-get failed",
    });
  });

  test("the awk escaping (no jq): the failing command's quotes and backslash arrive as typed", async () => {
    const r = await get("/api/installs/v2-nojq");
    expect(r.failed_command).toBe('echo "x" > C:\\temp');
    expect(r.outcome).toBe("failed");
  });

  test("tools and addons are their own kind, out of install rates unless asked for", async () => {
    expect(await get("/api/installs/tool-1")).toMatchObject({
      kind: "tool",
      type: "pve",
      outcome: "success",
      nsapp: "post-pve-install",
    });
    expect(await get("/api/installs/addon-1")).toMatchObject({ kind: "addon", outcome: "failed", exit_code: 1 });
    const installs = await get("/api/stats/summary?days=1");
    const all = await get("/api/stats/summary?days=1&kind=all");
    const tools = await get("/api/stats/summary?days=1&kind=tool");
    // Executions: v2-retry 2, up-1, v1-fail, v2-nojq = 5 installs' executions; + tool + addon.
    expect(installs.total).toBe(5);
    expect(all.total).toBe(7);
    expect(tools.total).toBe(1);
  });

  test("aggregates: retries, categories, exit codes, repo filter", async () => {
    const attempts = (await get("/api/stats/breakdown?days=1&by=attempt")) as unknown as {
      groups: { value: string; total: number; success: number }[];
    };
    expect(attempts.groups.find((g) => g.value === "2")).toMatchObject({ total: 1, success: 1 });
    expect(attempts.groups.find((g) => g.value === "1")).toMatchObject({ total: 4 });
    const categories = (await get("/api/stats/breakdown?days=1&by=error_category")) as unknown as {
      groups: { value: string | null; failed: number }[];
    };
    expect(categories.groups.find((g) => g.value === "dependency")?.failed).toBe(2);
    const forks = await get("/api/stats/summary?days=1&repo_source=external");
    expect(forks.total).toBe(2);
    const summary = await get("/api/stats/summary?days=1");
    expect(summary.retries).toEqual({
      installs: 4,
      executions: 5,
      executions_per_install: 1.25,
      retry_rate: 0.25,
      retries: 1,
      rescued: 1,
    });
    const codes127 = await get("/api/stats/summary?days=1&exit_code=127");
    expect(codes127.failed).toBe(1);
  });

  test("verify is clean after all of it", async () => {
    await server!.stop("SIGTERM");
    const proc = Bun.spawn([await compiledBinary(), "verify", "--db", db], { stdout: "pipe", stderr: "pipe" });
    const out = await new Response(proc.stdout).text();
    expect(await proc.exited, out).toBe(0);
  });
});
