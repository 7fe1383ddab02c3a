// Rollup cells as pure data: counting in and out, merging, slices, and the open hours' counts.
import { describe, expect, test } from "bun:test";
import { OUTCOMES } from "../../src/domain/outcome.ts";
import {
  ALL_APPS,
  DIMENSIONS,
  GRAINS,
  ROLLUP_VERSION,
  RollupDeltas,
  addRecord,
  appSlice,
  countHour,
  emptyData,
  mergeInto,
  repoClass,
  parseSlice,
  sliceKey,
  slicesOf,
  storedSlicesIn,
  storedSlicesOf,
  type RollupRecord,
} from "../../src/domain/rollup.ts";
import { HOUR } from "../../src/domain/time.ts";
import { storedAndRead } from "../helpers/cells.ts";

const record = (over: Partial<RollupRecord> = {}): RollupRecord => ({
  nsapp: "jellyfin",
  osType: "debian",
  osVersion: "12",
  pveVersion: "8.2.4",
  type: "lxc",
  method: "default",
  status: "failed",
  ctType: 1,
  coreCount: 2,
  ramSize: 2048,
  outcome: "failed",
  createdAt: 10 * HOUR + 5,
  durationMs: 90_000,
  error: "exit code 1",
  exitCode: 1,
  errorCategory: "unknown",
  platform: "pve",
  arch: "amd64",
  cpuVendor: "intel",
  gpuVendor: null,
  gpuPassthrough: null,
  hostGpu: null,
  repoSource: "ProxmoxVE",
  repoSlug: "community-scripts/ProxmoxVE",
  appVersion: "10.10",
  kernelVersion: "6.8.12-4-pve",
  attempt: 1,
  failedCommand: "apt-get install -y x",
  diskSize: 8,
  payloadVersion: 2,
  hasArm: false,
  ...over,
});

describe("ROLLUP_VERSION", () => {
  // Stored cells are rebuilt at start-up only when the version moves (SQLite's rollup_state,
  // PostgreSQL's rollup_version mark): a dimension added or removed without a new version would
  // leave cells that read its values as "" until the next rebuild.
  test("the outcomes and dimensions are those of the version: change one, bump the other (and this list)", () => {
    expect({ version: ROLLUP_VERSION, outcomes: OUTCOMES, dimensions: DIMENSIONS }).toEqual({
      version: 5,
      outcomes: ["success", "failed", "aborted", "in_progress", "unknown", "blocked"],
      dimensions: [
        "nsapp",
        "os",
        "pve_version",
        "type",
        "method",
        "status",
        "ct_type",
        "core_count",
        "ram_size",
        "exit_code",
        "error_category",
        "platform",
        "arch",
        "cpu_vendor",
        "gpu_vendor",
        "gpu_passthrough",
        "host_gpu",
        "repo_source",
        "repo_slug",
        "app_version",
        "kernel_version",
        "attempt",
        "failed_command",
        "disk_size",
        "client",
        "platform_class",
        "arch_class",
        "failure",
      ],
    });
  });
});

describe("addRecord", () => {
  test("a cell read back from storage empties as a fresh one does (entry counts kept beside the maps, counted once when parsed)", () => {
    const many = emptyData();
    for (let k = 0; k < 50; k++) addRecord(many, record({ nsapp: `app-${k}` }), "failed", 1, true, "sig1");
    const parsed = storedAndRead(many);
    for (let k = 0; k < 50; k++) addRecord(parsed, record({ nsapp: `app-${k}` }), "failed", -1, true, "sig1");
    expect(parsed).toEqual(emptyData());
    // Merging a negated copy into a parsed cell empties it too.
    const again = storedAndRead(many);
    const minus = emptyData();
    for (let k = 0; k < 50; k++) addRecord(minus, record({ nsapp: `app-${k}` }), "failed", -1, true, "sig1");
    expect(mergeInto(again, minus)).toEqual(emptyData());
  });

  test("a record counted in and out again leaves an empty cell, with no zero entries", () => {
    for (const allApps of [true, false]) {
      const cell = emptyData();
      const r = record();
      addRecord(cell, r, "failed", 1, allApps, "sig1");
      expect(cell.dims.type).toEqual({ lxc: [0, 1, 0, 0, 0, 0] });
      expect(cell.dims.exit_code).toEqual({ "1": [0, 1, 0, 0, 0, 0] });
      expect(cell.dims.failed_command).toEqual({ "apt-get install -y x": [0, 1, 0, 0, 0, 0] });
      // An app's own slice skips nsapp (it is the slice).
      expect(cell.dims.nsapp).toEqual(allApps ? { jellyfin: [0, 1, 0, 0, 0, 0] } : undefined);
      expect(Object.keys(cell.dims)).toHaveLength(allApps ? DIMENSIONS.length : DIMENSIONS.length - 1);
      expect(cell.err).toEqual({ sig1: 1 });
      addRecord(cell, r, "failed", -1, allApps, "sig1");
      expect(cell).toEqual(emptyData());
    }
  });

  test("a blocked run counts at index 5, in the failure dimension with its signature, and not in the signature counts", () => {
    const cell = emptyData();
    const r = record({ exitCode: 214, errorCategory: "storage" });
    addRecord(cell, r, "blocked", 1, true, "sig1");
    expect(cell.dims.type).toEqual({ lxc: [0, 0, 0, 0, 0, 1] });
    expect(cell.dims.exit_code).toEqual({ "214": [0, 0, 0, 0, 0, 1] });
    expect(cell.dims.failure).toEqual({ [["214", "storage", "sig1", "jellyfin"].join("\u001f")]: [0, 0, 0, 0, 0, 1] });
    expect(cell.err).toEqual({});
    const back = storedAndRead(cell);
    expect(back.dims.failure).toEqual(cell.dims.failure);
    addRecord(back, r, "blocked", -1, true, "sig1");
    expect(back).toEqual(emptyData());
  });

  test('absent values count under ""; attempts past 3 as 4+; long failed commands are cut', () => {
    const cell = emptyData();
    addRecord(
      cell,
      record({ exitCode: null, cpuVendor: null, attempt: 7, failedCommand: "x".repeat(300) }),
      "failed",
      1,
      true,
      null,
    );
    expect(cell.dims.exit_code).toEqual({ "": [0, 1, 0, 0, 0, 0] });
    expect(cell.dims.cpu_vendor).toEqual({ "": [0, 1, 0, 0, 0, 0] });
    expect(cell.dims.attempt).toEqual({ "4+": [0, 1, 0, 0, 0, 0] });
    expect(Object.keys(cell.dims.failed_command!)[0]!.length).toBe(96);
    expect(cell.err).toEqual({});
  });

  test('the os is its type and version, either alone when the other is absent, or ""', () => {
    const cell = emptyData();
    for (const [osType, osVersion] of [
      ["debian", "12"],
      ["alpine", null],
      [null, "24.04"],
      [null, null],
    ] as const)
      addRecord(cell, record({ osType, osVersion }), "success", 1, true, null);
    expect(cell.dims.os).toEqual({
      "debian 12": [1, 0, 0, 0, 0, 0],
      alpine: [1, 0, 0, 0, 0, 0],
      "24.04": [1, 0, 0, 0, 0, 0],
      "": [1, 0, 0, 0, 0, 0],
    });
  });

  test("counting a removal in place equals merging the same counts as a delta", () => {
    const a = record({ nsapp: "pihole", outcome: "success", status: "done", error: null, exitCode: 0 });
    const b = record();
    const inPlace = emptyData();
    addRecord(inPlace, a, "success", 1, true, null);
    addRecord(inPlace, b, "failed", 1, true, "sig1");
    addRecord(inPlace, b, "failed", -1, true, "sig1");
    const merged = emptyData();
    const plus = emptyData();
    addRecord(plus, a, "success", 1, true, null);
    addRecord(plus, b, "failed", 1, true, "sig1");
    const minus = emptyData();
    addRecord(minus, b, "failed", -1, true, "sig1");
    mergeInto(mergeInto(merged, plus), minus);
    expect(inPlace).toEqual(merged);
    expect(inPlace.dims.nsapp).toEqual({ pihole: [1, 0, 0, 0, 0, 0] });
  });
});

describe("slices", () => {
  test("an execution counts in eight slices of its kind: every repo or its repo class, every platform or its class, every app or its own", () => {
    expect(slicesOf(record())).toEqual([
      sliceKey("install", null, ALL_APPS),
      sliceKey("install", null, appSlice("jellyfin")),
      sliceKey("install", null, ALL_APPS, "pve"),
      sliceKey("install", null, appSlice("jellyfin"), "pve"),
      sliceKey("install", "ProxmoxVE", ALL_APPS),
      sliceKey("install", "ProxmoxVE", appSlice("jellyfin")),
      sliceKey("install", "ProxmoxVE", ALL_APPS, "pve"),
      sliceKey("install", "ProxmoxVE", appSlice("jellyfin"), "pve"),
    ]);
    expect(slicesOf(record({ type: "pve", nsapp: "post-pve-install", repoSource: null }))[0]).toBe(
      sliceKey("tool", null, ALL_APPS),
    );
    expect(slicesOf(record({ type: "addon" }))[0]).toBe(sliceKey("addon", null, ALL_APPS));
  });

  test("the engines store two slices, of its repo and platform classes; a slice of every repo or platform adds up the stored ones it contains", () => {
    expect(storedSlicesOf(record())).toEqual([
      sliceKey("install", "ProxmoxVE", ALL_APPS, "pve"),
      sliceKey("install", "ProxmoxVE", appSlice("jellyfin"), "pve"),
    ]);
    // Incus as sent, or read from the host version; "" when neither says.
    expect(storedSlicesOf(record({ platform: null, pveVersion: "incus-6.0.4" }))[0]).toBe(
      sliceKey("install", "ProxmoxVE", ALL_APPS, "incus"),
    );
    expect(storedSlicesOf(record({ platform: null, pveVersion: null, repoSource: null }))[1]).toBe(
      sliceKey("install", "", appSlice("jellyfin"), ""),
    );
    const stored = sliceKey("addon", "external", appSlice("a|b"), "incus");
    expect(storedSlicesIn(stored)).toEqual([stored]);
    expect(parseSlice(stored)).toEqual({ kind: "addon", repo: "external", platform: "incus", nsapp: "a|b" });
    expect(storedSlicesIn(sliceKey("install", "ProxmoxVE", ALL_APPS))).toEqual(
      ["pve", "incus", ""].map((p) => sliceKey("install", "ProxmoxVE", ALL_APPS, p)),
    );
    expect(storedSlicesIn(sliceKey("tool", null, appSlice("x"), "pve"))).toEqual(
      ["", "ProxmoxVE", "ProxmoxVED", "external"].map((r) => sliceKey("tool", r, appSlice("x"), "pve")),
    );
    const every = storedSlicesIn(sliceKey("install", null, ALL_APPS));
    expect(every).toHaveLength(12);
    // Every stored slice an execution counts in is in exactly the sums of the slices it counts in.
    for (const slice of slicesOf(record())) {
      const contained = storedSlicesIn(slice);
      expect(storedSlicesOf(record()).filter((s) => contained.includes(s))).toHaveLength(1);
    }
  });

  test('repo classes: the client\'s known sources, forks as external, none as ""', () => {
    expect(["ProxmoxVE", "ProxmoxVED", "external", "my-fork", "", null].map((s) => repoClass(s))).toEqual([
      "ProxmoxVE",
      "ProxmoxVED",
      "external",
      "external",
      "",
      "",
    ]);
  });
});

describe("RollupDeltas", () => {
  test("open hours keep records to count; folded hours become cells of every grain in every slice", () => {
    const deltas = new RollupDeltas(10 * HOUR);
    deltas.add(record({ createdAt: 10 * HOUR + 1 }), "failed", 1, "sig1");
    deltas.add(record({ createdAt: 9 * HOUR }), "failed", 1, "sig1");
    expect(deltas.open).toHaveLength(1);
    const slices = slicesOf(record());
    const grains = [...deltas.cells.values()].map((c) => c.key.grain).sort();
    expect(grains).toEqual([
      ...Array(slices.length).fill(GRAINS.hour),
      ...Array(slices.length).fill(GRAINS.day),
      ...Array(slices.length).fill(GRAINS.month),
    ]);
    expect(new Set([...deltas.cells.values()].map((c) => c.key.app))).toEqual(new Set(slices));
    const open = [...deltas.openCells().values()];
    expect(open.map((c) => c.key)).toEqual(slices.map((app) => ({ grain: GRAINS.hour, app, bucket: 10 * HOUR })));
    expect(open[0]!.data.dims.nsapp).toEqual({ jellyfin: [0, 1, 0, 0, 0, 0] });
    expect(open[1]!.data.dims.nsapp).toBeUndefined();
  });

  test("folding an hour adds its cell to the day and month cells that contain it", () => {
    const deltas = new RollupDeltas(0);
    const data = emptyData();
    addRecord(data, record(), "failed", 1, true, "sig1");
    const slice = sliceKey("install", null, ALL_APPS);
    deltas.foldHour(slice, 10 * HOUR, data);
    const keys = [...deltas.cells.values()].map((c) => c.key);
    expect(keys).toEqual([
      { grain: GRAINS.hour, app: slice, bucket: 10 * HOUR },
      { grain: GRAINS.day, app: slice, bucket: 0 },
      { grain: GRAINS.month, app: slice, bucket: 0 },
    ]);
    for (const c of deltas.cells.values()) expect(c.data).toEqual(data);
  });

  test("change moves only what changed, and comes to what counting out and in again does (open and folded hours)", () => {
    const before = record({
      status: "installing",
      outcome: "in_progress",
      durationMs: null,
      error: null,
      exitCode: null,
      failedCommand: null,
    });
    const cases = [
      record({ ...before, status: "configuring" }), // a progress ping
      record({ ...before, status: "configuring", appVersion: "2.0", cpuVendor: "amd" }), // fields filled in
      record({ ...before, status: "failed", outcome: "failed", durationMs: 60_000, error: "exit code 1", exitCode: 1 }), // the final report: everything moves
    ];
    for (const foldedUntil of [0, 100 * HOUR]) {
      for (const after of cases) {
        const moved = new RollupDeltas(foldedUntil);
        moved.change(before, after, null, after.outcome === "failed" ? "sig1" : null);
        const counted = new RollupDeltas(foldedUntil);
        counted.add(before, before.outcome, -1, null);
        counted.add(after, after.outcome, 1, after.outcome === "failed" ? "sig1" : null);
        // Deltas as they end up in a cell (merging drops entries that come to zero).
        const cellsOf = (d: RollupDeltas) =>
          [...d.cells.values(), ...d.openCells().values()].map((c) => [c.key, mergeInto(emptyData(), c.data)]);
        expect(cellsOf(moved)).toEqual(cellsOf(counted));
      }
    }
    // Every pair of ways one execution can be counted, also from a final state (a different
    // duration bin, signature or outcome), in place on a cell that counts it among others.
    const states: [RollupRecord, string | null][] = [
      [before, null],
      [cases[0]!, null],
      [cases[1]!, null],
      [cases[2]!, "sig1"],
      [record({ durationMs: 3_600_000 }), "sig2"],
      [record({ status: "done", outcome: "success", durationMs: 120_000, error: null }), null],
      [record({ status: "installing", outcome: "unknown", durationMs: null, error: null }), null],
      [record({ status: "failed", outcome: "aborted", durationMs: 5_000, exitCode: 130, error: "SIGINT" }), null],
    ];
    const sig = (r: RollupRecord, s: string | null) => (r.outcome === "failed" ? s : null);
    for (const [from, fromSig] of states) {
      for (const [to, toSig] of states) {
        for (const foldedUntil of [0, 100 * HOUR]) {
          const moved = new RollupDeltas(foldedUntil);
          moved.change(from, to, sig(from, fromSig), sig(to, toSig));
          const counted = new RollupDeltas(foldedUntil);
          counted.add(from, from.outcome, -1, sig(from, fromSig));
          counted.add(to, to.outcome, 1, sig(to, toSig));
          const cellsOf = (d: RollupDeltas) =>
            [...d.cells.values(), ...d.openCells().values()].map((c) => [c.key, mergeInto(emptyData(), c.data)]);
          expect({ from: from.status, to: to.status, cells: cellsOf(moved) }).toEqual({
            from: from.status,
            to: to.status,
            cells: cellsOf(counted),
          });
        }
        // In place, as the open hours apply a move to their cells.
        const others = record({ nsapp: "other", appVersion: "9", durationMs: 90_000 });
        const cell = emptyData();
        for (const [r, s] of [
          [others, "sig1"],
          [from, fromSig],
        ] as const)
          addRecord(cell, r, r.outcome, 1, true, sig(r, s));
        const open = new RollupDeltas(0);
        open.change(from, to, sig(from, fromSig), sig(to, toSig));
        // The cell stands for the all-apps slice of every repo; the other slices go elsewhere.
        for (const c of open.open)
          countHour((slice) => (slice === sliceKey("install", null, ALL_APPS) ? cell : emptyData()), c);
        const want = emptyData();
        for (const [r, s] of [
          [others, "sig1"],
          [to, toSig],
        ] as const)
          addRecord(want, r, r.outcome, 1, true, sig(r, s));
        expect({ from: from.status, to: to.status, cell }).toEqual({ from: from.status, to: to.status, cell: want });
      }
    }

    // A ping in an open hour is one move, not two counts.
    const open = new RollupDeltas(0);
    open.change(before, cases[0]!, null, null);
    expect(open.open).toHaveLength(1);
    const [cell] = [...open.openCells().values()];
    expect(cell!.data.dims.status).toEqual({ installing: [0, 0, 0, -1, 0, 0], configuring: [0, 0, 0, 1, 0, 0] });
    expect(cell!.data.dims.type).toBeUndefined(); // unchanged dimensions were not touched
  });
});
