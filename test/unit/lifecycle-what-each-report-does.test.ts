// The rules of domain/lifecycle.ts, table by table: what each report does to the execution it names.
import { describe, expect, test } from "bun:test";
import { defaults } from "../../src/config.ts";
import type { Execution, Report } from "../../src/domain/execution.ts";
import { decide, type Decision, type HeldReport } from "../../src/domain/lifecycle.ts";
import { normalizeStart, normalizeTelemetry, normalizeUpdate } from "../../src/domain/normalize.ts";

const OPTS = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };
const T0 = Date.parse("2026-11-01T10:00:00Z");

function ok<T>(c: { ok: true; value: T } | { ok: false; message: string }): T {
  if (!c.ok) throw new Error(c.message);
  return c.value;
}

/** A v2 report of one execution, as the community-scripts/core client sends it. */
const telemetry = (status: string, more: Record<string, unknown> = {}): Report =>
  ok(
    normalizeTelemetry(
      {
        payload_version: 2,
        random_id: "r1",
        execution_id: "e1",
        type: "lxc",
        nsapp: "nginx",
        status,
        ct_type: 1,
        disk_size: 4,
        core_count: 2,
        ram_size: 2048,
        os_type: "debian",
        os_version: "12",
        pve_version: "8.4.1",
        method: "default",
        exit_code: status === "failed" ? 100 : 0,
        error: status === "failed" ? "exit_code=100 | APT failed | at line 12: apt-get install -y nginx" : "",
        error_category: status === "failed" ? "dependency" : "",
        install_duration: 42,
        cpu_vendor: "intel",
        gpu_passthrough: "no",
        repo_source: "ProxmoxVE",
        repo_slug: "community-scripts/ProxmoxVE",
        ...more,
      },
      OPTS,
    ),
  );
const upStart = (id = "r1"): Report => ok(normalizeStart({ type: "lxc", nsapp: "nginx", random_id: id }, OPTS));
const upUpdate = (status: string, error: string | null = null, id = "r1"): Report =>
  ok(normalizeUpdate({ status, error, random_id: id }, OPTS));

const at = (minutes: number) => T0 + minutes * 60_000;
const ctx = (minutes: number, held: HeldReport | null = null, attempt = 1) => ({
  at: at(minutes),
  attempt,
  held,
  repaired: false,
});

/** Applies reports in order as a store would; returns each decision's kind and the execution. */
function run(reports: Report[]): { kinds: Decision["kind"][]; row: Execution | undefined } {
  let row: Execution | undefined;
  let held: HeldReport | null = null;
  const kinds: Decision["kind"][] = [];
  reports.forEach((report, i) => {
    const d = decide(row, report, ctx(i, row === undefined ? held : null));
    kinds.push(d.kind);
    if (d.kind === "insert" || d.kind === "update") row = d.row;
    if (d.kind === "duplicate" && d.row) row = d.row;
    if (d.kind === "hold") held = { report, at: at(i), repaired: false };
    if (d.kind === "insert") held = null;
  });
  return { kinds, row };
}

describe("/telemetry lifecycle", () => {
  test("start, pings, final: one execution with its timeline and the final report's ending", () => {
    const { kinds, row } = run([
      telemetry("installing"),
      telemetry("validation"),
      telemetry("configuring"),
      telemetry("failed"),
    ]);
    expect(kinds).toEqual(["insert", "update", "update", "update"]);
    expect(row).toMatchObject({
      executionId: "e1",
      randomId: "r1",
      attempt: 1,
      kind: "install",
      status: "failed",
      outcome: "failed",
      exitCode: 100,
      errorCategory: "dependency",
      installingAt: at(0),
      validationAt: at(1),
      configuringAt: at(2),
      finishedAt: at(3),
      durationMs: 3 * 60_000,
      installDuration: 42,
      gpuPassthrough: "no",
      hostGpu: null,
      payloadVersion: 2,
    });
  });

  const cases: [string, string[], Decision["kind"][], string][] = [
    ["a repeated start is a duplicate", ["installing", "installing"], ["insert", "duplicate"], "installing"],
    [
      "a repeated final is a duplicate, never a conflict",
      ["installing", "success", "success"],
      ["insert", "update", "duplicate"],
      "success",
    ],
    [
      "a contradicting final is a duplicate too: the first final stands",
      ["installing", "failed", "success"],
      ["insert", "update", "duplicate"],
      "failed",
    ],
    [
      "a ping after the final never moves it back",
      ["installing", "success", "configuring"],
      ["insert", "update", "duplicate"],
      "success",
    ],
    [
      "a late ping never moves the timeline back",
      ["installing", "configuring", "validation"],
      ["insert", "update", "duplicate"],
      "configuring",
    ],
    ["a final before its start is held, then applied", ["failed", "installing"], ["hold", "insert"], "failed"],
    [
      "a ping creates the execution when its start got lost",
      ["validation", "success"],
      ["insert", "update"],
      "success",
    ],
    [
      "aborted and unknown are final statuses",
      ["installing", "aborted", "unknown"],
      ["insert", "update", "duplicate"],
      "aborted",
    ],
  ];
  for (const [name, statuses, kinds, final] of cases) {
    test(name, () => {
      const r = run(statuses.map((s) => telemetry(s)));
      expect(r.kinds).toEqual(kinds);
      expect(r.row?.status).toBe(final);
    });
  }

  test("a contradicting final names the conflict (kept in the rejected log by the store)", () => {
    const { row } = run([telemetry("installing"), telemetry("failed")]);
    const d = decide(row, telemetry("success"), ctx(5));
    expect(d).toEqual({
      kind: "duplicate",
      row: null,
      conflict: "execution e1 already ended failed; success not applied",
    });
    expect(decide(row, telemetry("failed"), ctx(5))).toEqual({ kind: "duplicate", row: null, conflict: null });
  });

  test("a held final and a start: duration unknown, finished when the final came", () => {
    const { row } = run([telemetry("success"), telemetry("installing")]);
    expect(row).toMatchObject({
      status: "success",
      outcome: "success",
      durationMs: null,
      finishedAt: at(0),
      createdAt: at(1),
      installingAt: at(1),
    });
  });

  test("a retry is a new execution of the same install, with the next attempt number", () => {
    const first = run([telemetry("installing"), telemetry("failed")]).row!;
    const retry = decide(undefined, telemetry("installing", { execution_id: "e2" }), ctx(10, null, 2));
    expect(retry.kind).toBe("insert");
    if (retry.kind !== "insert") return;
    expect(retry.row).toMatchObject({ executionId: "e2", randomId: "r1", attempt: 2, status: "installing" });
    expect(first.executionId).toBe("e1");
  });

  test("tool and addon one-shots are stored at once, as their own kind", () => {
    const tool = decide(undefined, telemetry("success", { type: "pve", nsapp: "post-pve-install" }), ctx(0));
    expect(tool).toMatchObject({
      kind: "insert",
      row: { kind: "tool", status: "success", outcome: "success", finishedAt: at(0), durationMs: null },
    });
    const addon = decide(undefined, telemetry("failed", { type: "addon", nsapp: "netdata" }), ctx(0));
    expect(addon).toMatchObject({ kind: "insert", row: { kind: "addon", outcome: "failed", exitCode: 100 } });
  });

  test("the minimal in-container ping fills nothing in and keeps what the full reports said", () => {
    const ping = ok(
      normalizeTelemetry(
        {
          payload_version: 2,
          random_id: "r1",
          execution_id: "e1",
          type: "lxc",
          nsapp: "nginx",
          status: "configuring",
          platform: "pve",
          repo_source: "ProxmoxVE",
          repo_slug: "",
        },
        OPTS,
      ),
    );
    const { row } = run([telemetry("installing"), ping]);
    expect(row).toMatchObject({
      status: "configuring",
      cpuVendor: "intel",
      coreCount: 2,
      gpuPassthrough: "no",
      platform: "pve",
    });
  });

  test("an expired execution (unknown, still a progress status) takes its late final", () => {
    const started = run([telemetry("installing")]).row!;
    const expired: Execution = { ...started, outcome: "unknown" };
    expect(decide(expired, telemetry("success"), ctx(600))).toMatchObject({
      kind: "update",
      row: { outcome: "success" },
    });
    expect(decide(expired, telemetry("configuring"), ctx(600))).toMatchObject({
      kind: "update",
      row: { status: "configuring", outcome: "unknown" },
    });
  });
});

describe("/upload lifecycle (unchanged)", () => {
  const cases: [string, Report[], Decision["kind"][]][] = [
    ["start then final", [upStart(), upUpdate("done")], ["insert", "update"]],
    ["a repeated start is a duplicate", [upStart(), upStart()], ["insert", "duplicate"]],
    [
      "an update after the final is refused (409)",
      [upStart(), upUpdate("done"), upUpdate("failed")],
      ["insert", "update", "already-final"],
    ],
    ["an update before the start is held", [upUpdate("failed", "boom"), upStart()], ["hold", "insert"]],
    ["a second held final is refused", [upUpdate("failed"), upUpdate("done")], ["hold", "already-final"]],
  ];
  for (const [name, reports, kinds] of cases) test(name, () => expect(run(reports).kinds).toEqual(kinds));

  test("exit code parsed from the text and a category derived, as for /telemetry", () => {
    const { row } = run([upStart(), upUpdate("failed", "exit code 127: command not found")]);
    expect(row).toMatchObject({
      outcome: "failed",
      exitCode: 127,
      errorCategory: "dependency",
      payloadVersion: null,
      executionId: "r1",
    });
    const aborted = run([upStart(), upUpdate("failed", "INTERRUPTED")]).row;
    expect(aborted).toMatchObject({ outcome: "aborted", exitCode: 130, errorCategory: "user_aborted" });
  });
});
