// Export and import round-trip today's data: executions of /telemetry v1 and v2 (retries,
// hardware, repos, timelines, extra fields), tools and addons, and /upload records.
import { describe, expect, test } from "bun:test";
import { defaults } from "../../src/config.ts";
import type { Execution } from "../../src/domain/execution.ts";
import type { WriteOp } from "../../src/store/contract/store.ts";
import { openSqliteEngine } from "../../src/store/sqlite/engine.ts";
import { exportExecutions } from "../../src/transfer/export-executions.ts";
import { importRecords } from "../../src/transfer/import-records.ts";
import { testApp } from "../helpers/app.ts";

const NORMALIZE = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };

const v2 = (status: string, more: Record<string, unknown> = {}) => ({
  payload_version: 2,
  random_id: "r-v2",
  execution_id: "r-v2",
  type: "lxc",
  nsapp: "jellyfin",
  status,
  ct_type: 1,
  disk_size: 8,
  core_count: 2,
  ram_size: 2048,
  os_type: "debian",
  os_version: "12",
  pve_version: "8.4.1",
  method: "default",
  exit_code: status === "failed" ? 100 : 0,
  error: status === "failed" ? "exit_code=100 | APT failed\n---\nE: broken" : "",
  error_category: status === "failed" ? "dependency" : "",
  install_duration: 42,
  cpu_vendor: "amd",
  cpu_model: "Ryzen 7",
  gpu_vendor: "nvidia",
  gpu_model: "RTX",
  gpu_passthrough: "yes",
  ram_speed: "4800",
  arch: "amd64",
  platform: "pve",
  has_arm: false,
  kernel_version: "6.8.12",
  app_version: "10.10",
  failed_command: status === "failed" ? "apt-get install -y x" : "",
  failed_line: status === "failed" ? 12 : 0,
  repo_source: "external",
  repo_slug: "me/fork",
  future_field: { a: 1 },
  ...more,
});

async function populated() {
  const t = await testApp();
  const post = async (path: string, body: object) => expect((await t.post(path, body)).status).toBeLessThan(300);
  for (const s of ["installing", "validation", "configuring", "failed"]) {
    await post("/telemetry", v2(s));
    t.clock.advance(30_000);
  }
  for (const s of ["installing", "success"]) {
    await post("/telemetry", v2(s, { execution_id: "r-v2-retry" }));
    t.clock.advance(30_000);
  }
  await post("/telemetry", {
    random_id: "r-v1",
    type: "vm",
    nsapp: "haos",
    status: "installing",
    gpu_passthrough: "igpu",
    ct_type: 2,
  });
  await post("/telemetry", {
    random_id: "r-tool",
    type: "pve",
    nsapp: "post-pve-install",
    status: "success",
    payload_version: 2,
  });
  await post("/upload", { type: "lxc", nsapp: "adguard", random_id: "r-up", status: "installing", disableip6: "" });
  t.clock.advance(5_000);
  await post("/upload/updatestatus", { random_id: "r-up", status: "failed", error: "exit code 1" });
  return t;
}

const all = async (store: { executionChunks: (f: object) => AsyncIterable<Execution[]> }) => {
  const rows: Execution[] = [];
  for await (const chunk of store.executionChunks({})) rows.push(...chunk);
  return rows.sort((a, b) => (a.executionId < b.executionId ? -1 : 1));
};

describe("export -> import of executions", () => {
  test("NDJSON round-trips every execution field by field (repaired aside); again = duplicates", async () => {
    const source = await populated();
    const expected = await all(source.store);
    expect(expected.map((e) => e.executionId)).toEqual(["r-tool", "r-up", "r-v1", "r-v2", "r-v2-retry"]);
    let ndjson = "";
    const { records } = await exportExecutions(
      source.store,
      {},
      "ndjson",
      (chunk) => void (ndjson += new TextDecoder().decode(chunk)),
    );
    expect(records).toBe(5); // tools included: an export is a copy

    /** The input as a file read in pieces would give it. */
    async function* chunks(text: string): AsyncIterable<string> {
      for (let i = 0; i < text.length; i += 4096) yield text.slice(i, i + 4096);
    }

    const target = openSqliteEngine(":memory:", { durability: "normal", migrate: true });
    const deps = { reads: target.store, commit: (ops: readonly WriteOp[]) => target.store.write(ops) };
    const invalid: string[] = [];
    const summary = await importRecords(deps, chunks(ndjson), {
      normalize: NORMALIZE,
      onInvalid: (p, m) => invalid.push(`${p}: ${m}`),
    });
    expect(invalid).toEqual([]);
    expect(summary).toMatchObject({ imported: 5, duplicates: 0, invalid: 0 });
    const got = await all(target.store);
    for (let i = 0; i < expected.length; i++) expect(got[i]).toEqual({ ...expected[i]!, repaired: false });
    expect((await importRecords(deps, chunks(ndjson), { normalize: NORMALIZE })).duplicates).toBe(5);
    await target.close();
  });
});
