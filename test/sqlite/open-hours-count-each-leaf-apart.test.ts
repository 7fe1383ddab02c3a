// Open hours count a run into the cell of its leaf slice only (kind, repo class, platform class,
// app: src/store/sqlite/open-hours.ts). One app's runs under every kind, repo and platform in the
// same open hour, started, ended, failed and moved from one outcome to another, must each stay in
// their own leaf: the engine's answers equal a recount of the rows in every slice (verify), and a
// platform's or a repo's filter counts its own runs only.
import { expect, setDefaultTimeout, test } from "bun:test";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { testApp } from "../helpers/app.ts";

// In-process, but ~50 requests and a recount of every slice: more than bun's 5 s on a busy machine.
setDefaultTimeout(60_000);

const t = await testApp(); // in memory: nothing to remove

const TYPES = ["lxc", "addon", "pve"] as const; // the kinds install, addon and tool
const REPOS = ["ProxmoxVE", "ProxmoxVED", "my-fork"] as const; // "my-fork" counts as external
const PLATFORMS = [{ platform: "pve" }, { platform: "incus" }, {}] as const; // {} : none sent, class from pve_version

let n = 0;
const runs: { id: string; type: string; repo: string; platform: string; ended: boolean }[] = [];
for (const type of TYPES)
  for (const repo of REPOS)
    for (const where of PLATFORMS) {
      const id = `leaf-${++n}`;
      const base = {
        payload_version: 2,
        random_id: id,
        execution_id: id,
        type,
        nsapp: "nginx",
        ct_type: 1,
        os_type: n % 2 ? "debian" : "alpine",
        os_version: "12",
        pve_version: "8.4.1",
        method: "default",
        repo_source: repo,
        ...where,
      };
      expect((await t.post("/telemetry", { ...base, status: "installing" })).status).toBe(201);
      // Two of three end: a move within the leaf's cell from in progress to success or failure.
      const ended = n % 3 !== 0;
      if (ended) {
        t.clock.advance(1_000);
        const final =
          n % 3 === 1
            ? { status: "success", exit_code: 0, install_duration: 40 }
            : { status: "failed", exit_code: 100, error: `exit code 100 in run ${n % 4}`, install_duration: 9 };
        expect((await t.post("/telemetry", { ...base, ...final })).status).toBe(200);
      }
      runs.push({ id, type, repo, platform: "platform" in where ? where.platform : "pve", ended });
    }

// A run whose final report names another platform leaves its leaf (counted out there, in at the
// other), which empties the leaf; the app's next run on the first platform makes it again.
const solo = { payload_version: 2, type: "lxc", nsapp: "solo", pve_version: "8.4.1", repo_source: "ProxmoxVE" };
expect(
  (await t.post("/telemetry", { ...solo, random_id: "s1", execution_id: "s1", status: "installing", platform: "pve" }))
    .status,
).toBe(201);
t.clock.advance(1_000);
expect(
  (
    await t.post("/telemetry", {
      ...solo,
      random_id: "s1",
      execution_id: "s1",
      status: "success",
      exit_code: 0,
      platform: "incus",
    })
  ).status,
).toBe(200);
expect(
  (await t.post("/telemetry", { ...solo, random_id: "s2", execution_id: "s2", status: "installing", platform: "pve" }))
    .status,
).toBe(201);
runs.push(
  { id: "s1", type: "lxc", repo: "ProxmoxVE", platform: "incus", ended: true },
  { id: "s2", type: "lxc", repo: "ProxmoxVE", platform: "pve", ended: false },
);

test("every run stays in its own leaf: the open hour equals a recount in every slice", async () => {
  // Nothing was folded: every run is in the open hour, counted in memory.
  expect((t.sqlite.query("SELECT count(*) AS n FROM rollups").get() as { n: number }).n).toBe(0);
  const report = await verifyRollups(t.store);
  expect(report).toMatchObject({ ok: true, records: runs.length, mismatches: [] });
});

test("a platform's and a repo's filter count their own runs only", async () => {
  for (const platform of ["pve", "incus"] as const) {
    const res = await t.get(`/api/dashboard?days=1&platform=${platform}`);
    expect(res.status).toBe(200);
    expect(res.body.total_installs).toBe(runs.filter((r) => r.platform === platform).length);
  }
  const res = await t.get("/api/dashboard?days=1&repo=ProxmoxVED");
  expect(res.status).toBe(200);
  expect(res.body.total_installs).toBe(runs.filter((r) => r.repo === "ProxmoxVED").length);
});
