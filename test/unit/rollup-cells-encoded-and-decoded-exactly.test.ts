// Rollup cells as the engines store them (src/domain/rollup-codec.ts): binary parts over a label
// dictionary, absent values derived from the cell's total, every part decoded on its own.
import { describe, expect, test } from "bun:test";
import {
  DIMENSIONS,
  addRecord,
  emptyData,
  mergeInto,
  type RollupData,
  type RollupRecord,
} from "../../src/domain/rollup.ts";
import {
  CellFormatError,
  StoredSum,
  UnknownLabelError,
  decodePart,
  encodeCell,
  labelsOf,
  type StoredParts,
} from "../../src/domain/rollup-codec.ts";
import { LabelCache } from "../../src/store/common/labels.ts";
import { HOUR } from "../../src/domain/time.ts";

const uploadRecord = (over: Partial<RollupRecord> = {}): RollupRecord => ({
  nsapp: "jellyfin",
  osType: "debian",
  osVersion: "12",
  pveVersion: "8.2.4",
  type: "lxc",
  method: "default",
  status: "done",
  ctType: 1,
  coreCount: 2,
  ramSize: 2048,
  outcome: "success",
  createdAt: 10 * HOUR,
  durationMs: 90_000,
  error: null,
  exitCode: null,
  errorCategory: null,
  platform: null,
  arch: null,
  cpuVendor: null,
  gpuVendor: null,
  gpuPassthrough: null,
  hostGpu: null,
  repoSource: null,
  repoSlug: null,
  appVersion: null,
  kernelVersion: null,
  attempt: 1,
  failedCommand: null,
  diskSize: null,
  payloadVersion: null,
  hasArm: null,
  ...over,
});
const telemetryRecord = (over: Partial<RollupRecord> = {}): RollupRecord =>
  uploadRecord({
    status: "failed",
    outcome: "failed",
    error: "exit_code=100 | APT",
    exitCode: 100,
    errorCategory: "dependency",
    platform: "pve",
    arch: "amd64",
    cpuVendor: "intel",
    gpuVendor: "nvidia",
    gpuPassthrough: "yes",
    repoSource: "ProxmoxVE",
    repoSlug: "community-scripts/ProxmoxVE",
    appVersion: "10.11.2",
    kernelVersion: "6.14.8-2-pve",
    attempt: 2,
    failedCommand: "apt-get install -y jellyfin",
    ...over,
  });

function dictionary() {
  let next = 0;
  const made: string[] = [];
  const labels = new LabelCache((label) => (made.push(label), ++next));
  return { labels, made };
}

const PARTS = ["data", "apps", "errors"] as const;
function roundTrip(d: RollupData, allApps: boolean, labels: LabelCache): RollupData {
  const parts = encodeCell(d, allApps, labels);
  const out = emptyData();
  for (const part of PARTS) decodePart(out, part, parts[part], labels);
  return out;
}

describe("rollup cells as stored", () => {
  test("a cell decodes to exactly what was counted, for a cell of every app and one app's", () => {
    for (const allApps of [true, false]) {
      const { labels } = dictionary();
      const cell = emptyData();
      for (let i = 0; i < 40; i++) {
        const r =
          i % 3 === 0
            ? uploadRecord({ nsapp: `app-${i % 7}`, coreCount: i % 4 })
            : telemetryRecord({ nsapp: `app-${i % 5}`, durationMs: 1000 * i, attempt: 1 + (i % 5) });
        addRecord(cell, r, r.outcome, 1, allApps, r.outcome === "failed" ? `sig${i % 4}` : null);
      }
      // A removal that leaves negative-free zero entries out, as a recount would.
      addRecord(cell, uploadRecord({ nsapp: "app-0", coreCount: 0 }), "success", -1, allApps, null);
      expect(roundTrip(cell, allApps, labels)).toEqual(cell);
    }
  });

  test("absent values and dimensions nobody sent cost nothing: an /upload cell is a few bytes per value", () => {
    const { labels } = dictionary();
    const cell = emptyData();
    addRecord(cell, uploadRecord(), "success", 1, false, null);
    // The recount holds every dimension; the "" ones (14 of them for an /upload record) are derived.
    expect(Object.keys(cell.dims).length).toBe(DIMENSIONS.length - 1);
    expect(cell.dims.platform).toEqual({ "": [1, 0, 0, 0, 0, 0] });
    const parts = encodeCell(cell, false, labels);
    const written = Object.values(parts).reduce((n, p) => n + (p?.length ?? 0), 0);
    // The JSON the engines stored before: ~700 bytes for this cell.
    expect(JSON.stringify(cell).length).toBeGreaterThan(500);
    expect(written).toBeLessThan(60);
    expect(parts.apps).toBeNull(); // an app's own cell has no per-app counts
    expect(parts.errors).toBeNull();
    expect(roundTrip(cell, false, labels)).toEqual(cell);
  });

  test("parts decode on their own; an empty part adds nothing", () => {
    const { labels } = dictionary();
    const cell = emptyData();
    addRecord(cell, telemetryRecord(), "failed", 1, true, "abc");
    const parts = encodeCell(cell, true, labels);
    const apps = emptyData();
    decodePart(apps, "apps", parts.apps, labels);
    expect(apps).toEqual({ dims: { nsapp: { jellyfin: [0, 1, 0, 0, 0, 0] } }, dur: {}, err: {} });
    const errors = emptyData();
    decodePart(errors, "errors", parts.errors, labels);
    expect(errors.err).toEqual({ abc: 1 });
    const none = emptyData();
    decodePart(none, "apps", null, labels);
    expect(none).toEqual(emptyData());
  });

  test("labels are given once and only for texts a cell holds; labelsOf names them before encoding", () => {
    const { labels, made } = dictionary();
    const cell = emptyData();
    addRecord(cell, uploadRecord(), "success", 1, true, null);
    addRecord(cell, uploadRecord({ nsapp: "pihole" }), "success", 1, true, null);
    encodeCell(cell, true, labels);
    const first = [...made];
    encodeCell(cell, true, labels);
    expect(made).toEqual(first); // nothing new the second time
    expect(first).not.toContain(""); // absent values are never labels
    const wanted = new Set<string>();
    labelsOf(cell, wanted);
    for (const label of first) expect(wanted.has(label)).toBe(true);
  });

  test("cells read back and merged equal the cell counted at once", () => {
    const { labels } = dictionary();
    const a = emptyData();
    const b = emptyData();
    const both = emptyData();
    for (let i = 0; i < 10; i++) {
      const r = telemetryRecord({ nsapp: `app-${i}`, pveVersion: i % 2 ? "9.1.4" : "8.4.1" });
      addRecord(i < 5 ? a : b, r, r.outcome, 1, true, "s");
      addRecord(both, r, r.outcome, 1, true, "s");
    }
    const merged = mergeInto(roundTrip(a, true, labels), roundTrip(b, true, labels));
    expect(roundTrip(merged, true, labels)).toEqual(both);
  });

  test("damage is told apart: text where bytes belong, a truncated part, an unknown label", () => {
    const { labels } = dictionary();
    const cell = emptyData();
    addRecord(cell, telemetryRecord(), "failed", 1, true, "abc");
    const parts = encodeCell(cell, true, labels);
    expect(() => decodePart(emptyData(), "data", '{"dims":{}}', labels)).toThrow(CellFormatError);
    expect(() => decodePart(emptyData(), "data", parts.data.subarray(0, parts.data.length - 2), labels)).toThrow(
      CellFormatError,
    );
    expect(() => decodePart(emptyData(), "apps", parts.data, labels)).toThrow(CellFormatError); // another part's format
    const stranger = new LabelCache();
    expect(() => decodePart(emptyData(), "data", parts.data, stranger)).toThrow(UnknownLabelError);
  });

  test("stored cells summed as stored equal the decoded cells merged, with no label looked up but the dimensions'", () => {
    for (const allApps of [true, false]) {
      const { labels } = dictionary();
      // Days of one slice: /upload days (most dimensions "", no signatures), telemetry days with
      // failures and durations, a day of one record, and values that several days share.
      const days: RollupData[] = [];
      for (let d = 0; d < 6; d++) {
        const day = emptyData();
        const n = d === 3 ? 1 : 12;
        for (let i = 0; i < n; i++) {
          const r =
            d % 2 === 0
              ? uploadRecord({ nsapp: `app-${(d + i) % 4}`, coreCount: i % 3, createdAt: d * 24 * HOUR })
              : telemetryRecord({
                  nsapp: `app-${i % 6}`,
                  status: i % 3 === 0 ? "done" : "failed",
                  outcome: i % 3 === 0 ? "success" : "failed",
                  error: `exit_code=${100 + (i % 4)} | day ${d}`,
                  durationMs: 1000 * (i + d),
                  attempt: 1 + (i % 3),
                });
          addRecord(day, r, r.outcome, 1, allApps, r.outcome === "failed" ? `sig-${d}-${i % 3}` : null);
        }
        days.push(day);
      }
      const stored = days.map((d) => encodeCell(d, allApps, labels));
      const merged = emptyData();
      for (const d of days) mergeInto(merged, roundTrip(d, allApps, labels));

      // Texts are asked for by id only (a StoredSum is given no lookup by text), and only the dimensions'.
      const asked: number[] = [];
      const sum = new StoredSum({ text: (id) => (asked.push(id), labels.text(id)) });
      for (const parts of stored) sum.add(parts);
      const summed = sum.parts()!;
      const dimensionIds = new Set(DIMENSIONS.filter((d) => d !== "nsapp").map((d) => labels.id(d)));
      expect(asked.length).toBeGreaterThan(0);
      for (const id of asked) expect(dimensionIds.has(id)).toBe(true);

      const decoded = emptyData();
      for (const part of PARTS) decodePart(decoded, part, summed[part], labels);
      expect(decoded).toEqual(merged);
      expect(summed.apps === null).toBe(!allApps);
      expect(summed.errors).not.toBeNull();
    }
  });

  test("a stored sum of nothing is no cell; damage in any part is a CellFormatError", () => {
    const { labels } = dictionary();
    expect(new StoredSum(labels).parts()).toBeNull();
    const cell = emptyData();
    addRecord(cell, telemetryRecord(), "failed", 1, true, "abc");
    const parts = encodeCell(cell, true, labels);
    const damaged: Partial<StoredParts>[] = [
      { data: parts.data.subarray(0, parts.data.length - 1) },
      { apps: parts.data },
      { errors: new Uint8Array([...parts.errors!, 7]) },
      { data: "text where bytes belong" as unknown as Uint8Array },
    ];
    for (const over of damaged) expect(() => new StoredSum(labels).add({ ...parts, ...over })).toThrow(CellFormatError);
    // A data part whose dimension label is not a dimension (here: the app's name).
    const notADimension = encodeCell(cell, true, labels).data.slice();
    const sum = new StoredSum({ text: (id) => (id === labels.id("type") ? "jellyfin" : labels.text(id)) });
    expect(() => sum.add({ data: notADimension, apps: null, errors: null })).toThrow(/unknown dimension/);
  });
});
