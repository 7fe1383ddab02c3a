// The original public read API (community-scripts/ProxmoxVE, api/main.go): every endpoint, field
// by field, against the original's shapes and against expectations written out by hand from the
// reports sent; then streaming (lazy, bounded memory, writes interleave) and the pure helpers.
import { beforeAll, describe, expect, test } from "bun:test";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";
import { CHUNK_ROWS } from "../../src/read/original/data-routes.ts";
import { reuseWhileExpensive, EXPENSIVE_MS } from "../../src/read/reuse.ts";
import {
  originalId,
  countsObject,
  dateRange,
  errorCountsBody,
  goAtoi,
  goTime,
  pageWindow,
  parseDay,
  toOriginalRecord,
  type OriginalSource,
} from "../../src/read/original/data-shapes.ts";
import type { WriteOp } from "../../src/store/contract/store.ts";
import { execution } from "../helpers/reports.ts";

/** The original's record: Go DataModel fields, in declaration order (json.Encoder keeps it). */
const ORIGINAL_FIELDS = [
  "id",
  "ct_type",
  "disk_size",
  "core_count",
  "ram_size",
  "os_type",
  "os_version",
  "disableip6",
  "nsapp",
  "method",
  "created_at",
  "pve_version",
  "status",
  "random_id",
  "type",
  "error",
  // the first revision's (its clients sent them; the website's first data page reads them)
  "hn",
  "ssh",
  "verbose",
  "tags",
];

type Rec = Record<string, unknown>;

function compatApp(t: TestApp) {
  const { app } = t; // the composed app: compat routes are mounted there
  const raw = (path: string, init?: RequestInit) => app.handle(new Request(`http://localhost${path}`, init));
  const get = async (path: string) => {
    const res = await raw(path);
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: JSON.parse(text) as unknown };
  };
  return { raw, get };
}

/** Moves the test clock to an absolute instant. */
const at = (t: TestApp, iso: string) => t.clock.advance(Date.parse(iso) - t.clock());

/** The record the original would list for each report sent below (id checked apart). */
const base = {
  ct_type: 1,
  disk_size: 8,
  core_count: 2,
  ram_size: 2048,
  os_type: "debian",
  os_version: "12",
  disableip6: "yes",
  method: "default",
  pve_version: "8.2.2",
  type: "lxc",
  hn: "",
  ssh: "",
  verbose: "",
  tags: "",
};
const EXPECTED: Rec[] = [
  { ...base, nsapp: "adguard", created_at: "2026-06-01T12:00:00Z", status: "done", random_id: "r1", error: "none" },
  {
    ...base,
    ct_type: 2,
    disk_size: 32,
    ram_size: 4096,
    os_type: "ubuntu",
    os_version: "24.04",
    disableip6: "",
    nsapp: "jellyfin",
    type: "vm",
    created_at: "2026-06-01T12:00:01.25Z",
    status: "failed",
    random_id: "r2",
    error: "exit code 100",
  },
  {
    ...base,
    nsapp: "jellyfin",
    created_at: "2026-06-01T12:00:02.123Z",
    status: "failed",
    random_id: "r3",
    error: "exit code 100",
  },
  // Absent fields: zero values, never null (Go non-pointer fields).
  {
    ...base,
    core_count: 0,
    os_version: "",
    disableip6: "",
    nsapp: "",
    method: "",
    pve_version: "",
    created_at: "2026-06-01T13:00:00Z",
    status: "installing",
    random_id: "r4",
    error: "",
  },
  {
    ...base,
    nsapp: "homeassistant",
    created_at: "2026-06-02T23:59:59.5Z",
    status: "failed",
    random_id: "r5",
    error: "Failed at line 42: apt-get install -y curl",
  },
  {
    ...base,
    os_type: "alpine",
    os_version: "3.20",
    nsapp: "adguard",
    created_at: "2026-06-03T00:00:00Z",
    status: "done",
    random_id: "r6",
    error: "none",
  },
  { ...base, nsapp: "Adguard", created_at: "2026-06-03T05:00:00Z", status: "done", random_id: "r7", error: "" },
  // Status update before its start report: applied when the start arrives.
  {
    ...base,
    nsapp: "nextcloud",
    created_at: "2026-06-04T10:00:00Z",
    status: "failed",
    random_id: "r8",
    error: "exit code 1",
  },
  {
    ...base,
    nsapp: "nextcloud",
    created_at: "2026-06-04T10:30:00Z",
    status: "weird",
    random_id: "r9",
    error: "exit code 1",
  },
];

async function sendDataset(t: TestApp) {
  const ok = (r: { status: number }) => expect(r.status).toBeLessThan(300);
  ok(await t.post("/upload", startReport("r1", { nsapp: "adguard" })));
  at(t, "2026-06-01T12:00:01.250Z");
  ok(
    await t.post(
      "/upload",
      startReport("r2", {
        nsapp: "jellyfin",
        type: "vm",
        ct_type: 2,
        disk_size: "32G",
        ram_size: 4096,
        os_type: "Ubuntu",
        os_version: "24.04",
        disableip6: "",
      }),
    ),
  );
  at(t, "2026-06-01T12:00:02.123Z");
  ok(await t.post("/upload", startReport("r3", { nsapp: "jellyfin" })));
  at(t, "2026-06-01T12:01:30Z");
  ok(await t.post("/upload/updatestatus", { status: "done", error: "none", random_id: "r1" }));
  ok(await t.post("/upload/updatestatus", { status: "failed", error: "exit code 100", random_id: "r2" }));
  ok(await t.post("/upload/updatestatus", { status: "failed", error: "exit code 100", random_id: "r3" }));
  at(t, "2026-06-01T13:00:00Z");
  const r4 = startReport("r4", { core_count: "" }) as Record<string, unknown>;
  for (const k of ["nsapp", "os_version", "disableip6", "method", "pve_version"]) delete r4[k];
  ok(await t.post("/upload", r4));
  at(t, "2026-06-02T23:59:59.500Z");
  ok(await t.post("/upload", startReport("r5", { nsapp: "homeassistant" })));
  at(t, "2026-06-03T00:00:00Z");
  ok(await t.post("/upload", startReport("r6", { nsapp: "adguard", os_type: "alpine", os_version: "3.20" })));
  ok(
    await t.post("/upload/updatestatus", {
      status: "failed",
      error: "Failed at line 42: apt-get install -y curl",
      random_id: "r5",
    }),
  );
  ok(await t.post("/upload/updatestatus", { status: "done", error: "none", random_id: "r6" }));
  at(t, "2026-06-03T05:00:00Z");
  ok(await t.post("/upload", startReport("r7", { nsapp: "Adguard" })));
  ok(await t.post("/upload/updatestatus", { status: "DONE", random_id: "r7" }));
  at(t, "2026-06-04T09:59:00Z");
  ok(await t.post("/upload/updatestatus", { status: "failed", error: "exit code 1", random_id: "r8" }));
  at(t, "2026-06-04T10:00:00Z");
  ok(await t.post("/upload", startReport("r8", { nsapp: "nextcloud" })));
  at(t, "2026-06-04T10:30:00Z");
  ok(await t.post("/upload", startReport("r9", { nsapp: "nextcloud" })));
  ok(await t.post("/upload/updatestatus", { status: "weird", error: "exit code 1", random_id: "r9" }));
  at(t, "2026-06-05T08:00:00Z");
}

const withoutId = (records: unknown) => (records as Rec[]).map(({ id: _, ...r }) => r);
const ids = (records: unknown) => (records as Rec[]).map((r) => r.random_id);
const expectedWhere = (pred: (r: Rec) => boolean) => EXPECTED.filter(pred);

const datasetApp = await testApp();
describe("compat API over a hand-made dataset", () => {
  const t = datasetApp;
  const c = compatApp(t);
  beforeAll(() => sendDataset(t));

  test("/data/json: every record, oldest first, the original's fields in its order, no nulls", async () => {
    const res = await c.get("/data/json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.text.endsWith("]\n")).toBe(true); // json.Encoder ends with a newline
    const records = res.body as Rec[];
    expect(withoutId(records)).toEqual(EXPECTED.map(({ ...r }) => r));
    for (const r of records) {
      expect(Object.keys(r)).toEqual(ORIGINAL_FIELDS);
      for (const v of Object.values(r)) expect(v).not.toBeNull(); // the original dashboard calls value.toString() on each
    }
  });

  test("/data/json: id is ObjectID-shaped, stable, unique, and sorts like created_at", async () => {
    const a = (await c.get("/data/json")).body as Rec[];
    const b = (await c.get("/data/json")).body as Rec[];
    expect(a.map((r) => r.id)).toEqual(b.map((r) => r.id));
    expect(new Set(a.map((r) => r.id)).size).toBe(a.length);
    for (const r of a) {
      expect(r.id).toMatch(/^[0-9a-f]{24}$/);
      // An ObjectID starts with its creation time in seconds.
      expect(parseInt((r.id as string).slice(0, 8), 16)).toBe(Math.floor(Date.parse(r.created_at as string) / 1000));
    }
    const byId = [...a].sort((x, y) => ((x.id as string) < (y.id as string) ? -1 : 1)).map((r) => r.random_id);
    expect(byId).toEqual(ids(a));
  });

  test("/data/paginated: defaults page 1, limit 10; pages cut the /data/json order", async () => {
    const all = (await c.get("/data/json")).body as Rec[];
    expect((await c.get("/data/paginated")).body).toEqual(all.slice(0, 10));
    expect((await c.get("/data/paginated?page=2&limit=4")).body).toEqual(all.slice(4, 8));
    expect((await c.get("/data/paginated?page=3&limit=4")).body).toEqual(all.slice(8, 9)); // last, partial
    const past = await c.get("/data/paginated?page=4&limit=4");
    expect(past.status).toBe(200);
    expect(past.body).toEqual([]);
    let joined: Rec[] = [];
    for (let page = 1; ; page++) {
      const p = (await c.get(`/data/paginated?page=${page}&limit=2`)).body as Rec[];
      if (p.length === 0) break;
      expect(p.length).toBeLessThanOrEqual(2);
      joined = joined.concat(p);
    }
    expect(joined).toEqual(all);
  });

  test("/data/paginated: unreadable page or limit falls back like Go's ignored Atoi error", async () => {
    const all = (await c.get("/data/json")).body as Rec[];
    const first2 = all.slice(0, 2);
    for (const q of [
      "page=0&limit=2",
      "page=-3&limit=2",
      "page=abc&limit=2",
      "page=1.5&limit=2",
      "page=&limit=2",
      "limit=2",
      "page=%201&limit=2",
    ]) {
      expect((await c.get(`/data/paginated?${q}`)).body, q).toEqual(first2);
    }
    for (const q of ["page=1&limit=0", "page=1&limit=-1", "page=1&limit=", "page=1&limit=ten", "page=1&limit=2x"]) {
      expect((await c.get(`/data/paginated?${q}`)).body, q).toEqual(all.slice(0, 10));
    }
    expect((await c.get("/data/paginated?page=%2B2&limit=2")).body).toEqual(all.slice(2, 4)); // Atoi takes "+2"
    expect((await c.get("/data/paginated?page=2&page=1&limit=2")).body).toEqual(all.slice(2, 4)); // first value, as Query().Get
    expect((await c.get("/data/paginated?page=1&limit=100000000")).body).toEqual(all); // no upper bound
    const huge = await c.get("/data/paginated?page=99999999999999999999&limit=99999999999999999999");
    expect([huge.status, huge.body]).toEqual([200, []]);
  });

  test("/data/summary: total_entries, status_count, nsapp_count over all time, keys sorted", async () => {
    const res = await c.get("/data/summary");
    expect(res.status).toBe(200);
    expect(Object.keys(res.body as Rec)).toEqual(["total_entries", "status_count", "nsapp_count"]);
    expect(res.body).toEqual({
      total_entries: 9,
      status_count: { done: 3, failed: 4, installing: 1, weird: 1 },
      nsapp_count: { "": 1, Adguard: 1, adguard: 2, homeassistant: 1, jellyfin: 2, nextcloud: 2 },
    });
    const body = res.body as { status_count: Rec; nsapp_count: Rec };
    expect(Object.keys(body.nsapp_count)).toEqual(["", "Adguard", "adguard", "homeassistant", "jellyfin", "nextcloud"]); // Go sorts map keys
    expect(Object.keys(body.status_count)).toEqual(["done", "failed", "installing", "weird"]);
  });

  test("/data/summary: still all time long after, and it follows status updates", async () => {
    t.clock.advance(400 * 86_400_000);
    expect(((await c.get("/data/summary")).body as Rec).total_entries).toBe(9);
    t.clock.advance(-400 * 86_400_000);
    expect(((await c.get("/data/summary")).body as Rec).total_entries).toBe(9);
  });

  test("/data/nsapp: exact, case-sensitive; unknown is []; absent or empty lists installs without an app", async () => {
    const cases: [string, string[]][] = [
      ["nsapp=jellyfin", ["r2", "r3"]],
      ["nsapp=adguard", ["r1", "r6"]],
      ["nsapp=Adguard", ["r7"]],
      ["nsapp=ADGUARD", []],
      ["nsapp=jelly", []],
      ["nsapp=does-not-exist", []],
      ["", ["r4"]],
      ["nsapp=", ["r4"]],
    ];
    for (const [q, want] of cases) {
      const res = await c.get(`/data/nsapp?${q}`);
      expect(res.status, q).toBe(200);
      expect(withoutId(res.body), q).toEqual(expectedWhere((r) => want.includes(r.random_id as string)));
    }
  });

  test("/data/date: whole days in UTC, end day included to its last millisecond", async () => {
    const cases: [string, string, string[]][] = [
      ["2026-06-01", "2026-06-01", ["r1", "r2", "r3", "r4"]],
      ["2026-06-02", "2026-06-02", ["r5"]], // 23:59:59.500 is in (the original stopped at 23:59:59.000)
      ["2026-06-03", "2026-06-03", ["r6", "r7"]], // 00:00:00.000 is in
      ["2026-06-02", "2026-06-03", ["r5", "r6", "r7"]],
      ["2026-05-01", "2026-07-01", EXPECTED.map((r) => r.random_id as string)],
      ["2026-06-05", "2026-06-30", []],
      ["2026-06-03", "2026-06-01", []], // start after end: nothing, no error (as the original)
    ];
    for (const [start, end, want] of cases) {
      const res = await c.get(`/data/date?start_date=${start}&end_date=${end}`);
      expect(res.status).toBe(200);
      expect(withoutId(res.body), `${start}..${end}`).toEqual(
        expectedWhere((r) => want.includes(r.random_id as string)),
      );
    }
  });

  test("/data/date: missing or malformed days are 400 with the JSON error body", async () => {
    const cases: [string, string][] = [
      ["", "start_date"],
      ["end_date=2026-06-01", "start_date"],
      ["start_date=2026-06-01", "end_date"],
      ["start_date=&end_date=2026-06-01", "start_date"],
      ["start_date=2026-6-01&end_date=2026-06-01", "start_date"],
      ["start_date=2026-02-30&end_date=2026-06-01", "start_date"],
      ["start_date=2026-13-01&end_date=2026-06-01", "start_date"],
      ["start_date=2026-06-01T00:00:00Z&end_date=2026-06-01", "start_date"],
      ["start_date=yesterday&end_date=today", "start_date"],
      ["start_date=2026-06-01&end_date=2025-02-29", "end_date"],
      ["start_date=2026-06-01&end_date=%202026-06-02", "end_date"],
    ];
    for (const [q, field] of cases) {
      const res = await c.get(`/data/date?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.headers.get("content-type"), q).toStartWith("application/json");
      expect(res.body, q).toEqual({ error: "invalid_field", message: expect.any(String), field });
    }
    expect((await c.get("/data/date?start_date=2024-02-29&end_date=2024-02-29")).status).toBe(200); // leap day
  });

  test("/data/status: exact status (stored lowercase, so any case matches); unknown or absent is []", async () => {
    const cases: [string, string[]][] = [
      ["status=failed", ["r2", "r3", "r5", "r8"]],
      ["status=FAILED", ["r2", "r3", "r5", "r8"]],
      ["status=done", ["r1", "r6", "r7"]],
      ["status=weird", ["r9"]],
      ["status=installing", ["r4"]],
      ["status=fail", []],
      ["", []],
    ];
    for (const [q, want] of cases) {
      const res = await c.get(`/data/status?${q}`);
      expect(withoutId(res.body), q).toEqual(expectedWhere((r) => want.includes(r.random_id as string)));
    }
  });

  test("/data/os: os_type and os_version both matched; an absent one matches installs without it", async () => {
    const cases: [string, string[]][] = [
      ["os_type=debian&os_version=12", ["r1", "r3", "r5", "r7", "r8", "r9"]],
      ["os_type=Debian&os_version=12", ["r1", "r3", "r5", "r7", "r8", "r9"]],
      ["os_type=ubuntu&os_version=24.04", ["r2"]],
      ["os_type=alpine&os_version=3.20", ["r6"]],
      ["os_type=alpine&os_version=3.2", []],
      ["os_type=debian", ["r4"]], // r4 sent no os_version: the original matched os_version ""
      ["os_version=12", []],
      ["", []],
    ];
    for (const [q, want] of cases) {
      const res = await c.get(`/data/os?${q}`);
      expect(withoutId(res.body), q).toEqual(expectedWhere((r) => want.includes(r.random_id as string)));
    }
  });

  test("/data/errors: installs per exact error text, any status, most frequent first", async () => {
    const res = await c.get("/data/errors");
    expect(res.status).toBe(200);
    // Recount from the expected records: every non-empty error, whatever the status.
    const want = new Map<string, number>();
    for (const r of EXPECTED) if (r.error !== "") want.set(r.error as string, (want.get(r.error as string) ?? 0) + 1);
    expect(res.body).toEqual({
      error_counts: [
        { error: "exit code 1", count: 2 },
        { error: "exit code 100", count: 2 },
        { error: "none", count: 2 },
        { error: "Failed at line 42: apt-get install -y curl", count: 1 },
      ],
    });
    const got = (res.body as { error_counts: { error: string; count: number }[] }).error_counts;
    expect(new Map(got.map((e) => [e.error, e.count]))).toEqual(want);
    for (const e of got) expect(Object.keys(e)).toEqual(["error", "count"]);
  });

  test("CORS is off by default (restrictive), and --cors-origins opens it; security headers reach streamed answers", async () => {
    const closed = await c.raw("/data/json", { headers: { origin: "https://example.org" } });
    expect(closed.headers.get("access-control-allow-origin")).toBeNull();
    expect(closed.headers.get("x-content-type-options")).toBe("nosniff");

    const open = await testApp({ corsOrigins: ["*"] });
    const preflight = await open.app.handle(
      new Request("http://localhost/data/summary", {
        method: "OPTIONS",
        headers: { origin: "https://example.org", "access-control-request-method": "GET" },
      }),
    );
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("GET");
    for (const p of [
      "/data/json",
      "/data/paginated",
      "/data/nsapp?nsapp=x",
      "/data/status?status=x",
      "/data/os",
      "/data/summary",
      "/data/errors",
    ]) {
      const res = await open.app.handle(
        new Request(`http://localhost${p}`, { headers: { origin: "https://example.org" } }),
      );
      expect(res.headers.get("access-control-allow-origin"), p).toBe("*");
    }
  });

  test("errors and summary follow new reports at once on a small database", async () => {
    at(t, "2026-06-05T09:00:00Z");
    await t.post("/upload", startReport("r10", { nsapp: "jellyfin" }));
    await t.post("/upload/updatestatus", { status: "failed", error: "exit code 1", random_id: "r10" });
    const errors = (await c.get("/data/errors")).body as { error_counts: { error: string; count: number }[] };
    expect(errors.error_counts[0]).toEqual({ error: "exit code 1", count: 3 });
    const summary = (await c.get("/data/summary")).body as {
      total_entries: number;
      nsapp_count: Rec;
      status_count: Rec;
    };
    expect([summary.total_entries, summary.nsapp_count.jellyfin, summary.status_count.failed]).toEqual([10, 3, 5]);
  });
});

const emptyApp = await testApp();
describe("compat API on an empty database", () => {
  const c = compatApp(emptyApp);
  test("lists are [] (not Go's null), summary is zero, errors is []", async () => {
    for (const p of [
      "/data/json",
      "/data/paginated",
      "/data/nsapp?nsapp=x",
      "/data/status?status=done",
      "/data/os?os_type=debian&os_version=12",
      "/data/date?start_date=2026-01-01&end_date=2026-12-31",
    ]) {
      const res = await c.get(p);
      expect([res.status, res.text], p).toEqual([200, "[]\n"]);
    }
    expect((await c.get("/data/summary")).body).toEqual({ total_entries: 0, status_count: {}, nsapp_count: {} });
    expect((await c.get("/data/errors")).body).toEqual({ error_counts: [] });
  });
});

/** Whole executions loaded straight into the store (fast), one second apart, from `start`. */
function bulk(t: TestApp, n: number, start: number, prefix = "bulk") {
  const ops: WriteOp[] = [];
  for (let i = 0; i < n; i++) {
    const at = start + i * 1000;
    const status = i % 3 === 0 ? "installing" : i % 3 === 1 ? "done" : "failed";
    ops.push({
      kind: "load",
      at,
      execution: execution(`${prefix}-${String(i).padStart(6, "0")}`, {
        type: i % 5 === 0 ? "vm" : "lxc",
        ctType: i % 5 === 0 ? 2 : 1,
        diskSize: 8,
        nsapp: `app-${i % 37}`,
        pveVersion: "8.2.2",
        status,
        outcome: i % 3 === 0 ? "in_progress" : i % 3 === 1 ? "success" : "failed",
        error: i % 3 === 2 ? `exit code ${i % 7}` : null,
        exitCode: i % 3 === 2 ? i % 7 : null,
        createdAt: at,
        updatedAt: at,
        installingAt: at,
        finishedAt: i % 3 === 0 ? null : at,
      }),
    });
    if (ops.length === 5000 || i === n - 1) t.store.write(ops.splice(0));
  }
}

describe("streaming", () => {
  test("rows are read while the response is consumed: later changes show, later installs do not, writes go on", async () => {
    const t = await testApp();
    const c = compatApp(t);
    const n = CHUNK_ROWS * 3 + 17;
    const start = Date.parse("2026-06-01T00:00:00Z");
    bulk(t, n, start);
    at(t, "2026-06-02T00:00:00Z");

    const res = await c.raw("/data/json");
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const first = await reader.read();
    let text = decoder.decode(first.value!, { stream: true });
    // One chunk so far, not the whole array.
    expect(text.startsWith("[")).toBe(true);
    expect(text.split('"random_id":').length - 1).toBeLessThanOrEqual(CHUNK_ROWS);

    // While the stream is open: finish the last install, and add a new one (the database stays writable).
    const lastIndex = n - 1 - ((n - 1) % 3); // the newest install still in progress (bulk: every third), in the last chunk
    const last = `bulk-${String(lastIndex).padStart(6, "0")}`;
    expect((await t.store.getExecutions(last))[0]!.status).toBe("installing");
    expect((await t.post("/upload/updatestatus", { status: "done", error: "none", random_id: last })).status).toBe(200);
    expect((await t.post("/upload", startReport("late"))).status).toBe(201);

    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    const records = JSON.parse(text) as Rec[];
    expect(records.length).toBe(n); // the install created after the request began is not in it
    expect(records[lastIndex]).toMatchObject({ random_id: last, status: "done", error: "none" }); // read after the update
    expect(records.map((r) => r.random_id)).toEqual(
      Array.from({ length: n }, (_, i) => `bulk-${String(i).padStart(6, "0")}`),
    );
  });

  test("a large export streams with bounded memory, and equals the rows", async () => {
    const t = await testApp();
    const c = compatApp(t);
    const n = 60_000;
    bulk(t, n, Date.parse("2026-01-01T00:00:00Z"));
    at(t, "2026-06-02T00:00:00Z");

    Bun.gc(true);
    const before = process.memoryUsage();
    const baseline = before.heapUsed + before.arrayBuffers;
    let peak = 0;
    const res = await c.raw("/data/json");
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    // Parse as it arrives (records are flat objects, so "},{" only splits them), keeping only a count and a checksum.
    let tail = "";
    let count = 0;
    let bytes = 0;
    let sampleMismatch = 0;
    const rows = t.sqlite.query(
      "SELECT random_id, status, nsapp, created_at FROM executions ORDER BY created_at, rowid LIMIT 1 OFFSET ?",
    );
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      tail += decoder.decode(value, { stream: true });
      const parts = tail.replace(/^\[/, "").replace(/^,/, "").split("},{");
      tail = parts.pop()!;
      for (const p of parts) {
        const rec = JSON.parse(`{${p.replace(/^\{/, "")}}`) as Rec;
        if (count % 997 === 0) {
          const row = rows.get(count) as { random_id: string; status: string; nsapp: string; created_at: number };
          if (
            rec.random_id !== row.random_id ||
            rec.status !== row.status ||
            rec.nsapp !== row.nsapp ||
            rec.created_at !== goTime(row.created_at)
          )
            sampleMismatch++;
        }
        count++;
      }
      // Measured while this read's bytes are still referenced.
      Bun.gc(true);
      const m = process.memoryUsage();
      peak = Math.max(peak, m.heapUsed + m.arrayBuffers - baseline);
      expect(value.byteLength).toBeGreaterThan(0);
    }
    count += JSON.parse(
      tail.endsWith("]\n") ? `[{${tail.replace(/^\{/, "").slice(0, -2).replace(/\}$/, "")}}]` : "[]",
    ).length;
    expect(count).toBe(n);
    expect(sampleMismatch).toBe(0);
    expect(bytes).toBeGreaterThan(18_000_000);
    // The whole array would hold ~60k objects (tens of MB) at once; a chunk is ~1000 records.
    expect(peak).toBeLessThan(8_000_000);
  }, 60_000);

  test("summary from rollups equals a plain recount of the rows", async () => {
    const t = await testApp();
    const c = compatApp(t);
    bulk(t, 12_345, Date.parse("2026-02-27T22:30:00Z"));
    const res = (await c.get("/data/summary")).body as { total_entries: number; status_count: Rec; nsapp_count: Rec };
    const recount = (col: string) =>
      Object.fromEntries(
        (
          t.sqlite.query(`SELECT coalesce(${col}, '') AS k, count(*) AS n FROM executions GROUP BY 1`).all() as {
            k: string;
            n: number;
          }[]
        ).map((r) => [r.k, r.n]),
      );
    expect(res.total_entries).toBe(12_345);
    // In the original's words: success done, failures and aborts failed, runs going installing.
    const words =
      "CASE WHEN outcome = 'success' THEN 'done' WHEN outcome IN ('failed', 'aborted') THEN 'failed' WHEN outcome = 'in_progress' OR status IN ('installing', 'validation', 'configuring') THEN 'installing' ELSE status END";
    expect(res.status_count).toEqual(recount(words));
    expect(res.status_count).toEqual({ done: 4115, failed: 4115, installing: 4115 });
    expect(res.nsapp_count).toEqual(recount("nsapp"));
    const errors = (await c.get("/data/errors")).body as { error_counts: { error: string; count: number }[] };
    expect(Object.fromEntries(errors.error_counts.map((e) => [e.error, e.count]))).toEqual(
      Object.fromEntries(
        (
          t.sqlite.query("SELECT error AS k, count(*) AS n FROM executions WHERE error <> '' GROUP BY 1").all() as {
            k: string;
            n: number;
          }[]
        ).map((r) => [r.k, r.n]),
      ),
    );
  });
});

describe("shaping helpers", () => {
  test("goTime writes RFC 3339 as Go does: UTC, no trailing zeros in the fraction", async () => {
    expect(goTime(Date.parse("2026-06-01T12:00:00.000Z"))).toBe("2026-06-01T12:00:00Z");
    expect(goTime(Date.parse("2026-06-01T12:00:00.500Z"))).toBe("2026-06-01T12:00:00.5Z");
    expect(goTime(Date.parse("2026-06-01T12:00:00.120Z"))).toBe("2026-06-01T12:00:00.12Z");
    expect(goTime(Date.parse("2026-06-01T12:00:00.007Z"))).toBe("2026-06-01T12:00:00.007Z");
    expect(goTime(Date.parse("2026-06-01T12:00:10.000Z"))).toBe("2026-06-01T12:00:10Z");
  });

  test("goAtoi and pageWindow read numbers as the original", async () => {
    expect([
      goAtoi("12"),
      goAtoi("+3"),
      goAtoi("-4"),
      goAtoi("007"),
      goAtoi(""),
      goAtoi(" 1"),
      goAtoi("1.5"),
      goAtoi("1e3"),
      goAtoi(undefined),
    ]).toEqual([12, 3, -4, 7, 0, 0, 0, 0, 0]);
    expect(goAtoi("99999999999999999999999")).toBe(9_223_372_036_854_775_807);
    expect(pageWindow(undefined, undefined)).toEqual({ offset: 0, limit: 10 });
    expect(pageWindow("3", "25")).toEqual({ offset: 50, limit: 25 });
    expect(pageWindow("0", "0")).toEqual({ offset: 0, limit: 10 });
  });

  test("parseDay and dateRange accept exactly YYYY-MM-DD, calendar-checked", async () => {
    expect(parseDay("2026-06-01")).toBe(Date.parse("2026-06-01T00:00:00Z"));
    expect(parseDay("2024-02-29")).toBe(Date.parse("2024-02-29T00:00:00Z"));
    for (const bad of [
      "2025-02-29",
      "2026-04-31",
      "2026-00-10",
      "2026-06-00",
      "2026-6-1",
      "26-06-01",
      "2026-06-01 ",
      "2026/06/01",
      "",
    ])
      expect(parseDay(bad), bad).toBeNull();
    expect(dateRange("2026-06-01", "2026-06-02")).toEqual({
      ok: true,
      from: Date.parse("2026-06-01T00:00:00Z"),
      to: Date.parse("2026-06-03T00:00:00Z"),
    });
    expect(dateRange(undefined, "x")).toMatchObject({ ok: false, field: "start_date" });
    expect(dateRange("x", "y")).toMatchObject({ ok: false, field: "start_date" });
    expect(dateRange("2026-06-01", "y")).toMatchObject({ ok: false, field: "end_date" });
  });

  test("originalId: 24 hex, time first, stable per install, distinct across installs", async () => {
    const ms = Date.parse("2026-06-01T12:00:00.250Z");
    const id = originalId("abc", ms);
    expect(id).toMatch(/^[0-9a-f]{24}$/);
    expect(id.slice(0, 8)).toBe(((ms / 1000) >>> 0).toString(16).padStart(8, "0"));
    expect(id.slice(8, 12)).toBe("00fa"); // 250 ms
    expect(originalId("abc", ms)).toBe(id);
    expect(originalId("abd", ms)).not.toBe(id);
  });

  test("toOriginalRecord: absent values are Go zero values", async () => {
    const row: OriginalSource = {
      randomId: "x",
      type: "lxc",
      ctType: null,
      diskSize: null,
      coreCount: null,
      ramSize: null,
      osType: null,
      osVersion: null,
      disableip6: null,
      nsapp: null,
      method: null,
      pveVersion: null,
      status: "installing",
      outcome: "in_progress",
      error: null,
      createdAt: 0,
      extra: null,
    };
    const { id: _, ...rest } = toOriginalRecord(row);
    expect(rest).toEqual({
      ct_type: 0,
      disk_size: 0,
      core_count: 0,
      ram_size: 0,
      os_type: "",
      os_version: "",
      disableip6: "",
      nsapp: "",
      method: "",
      created_at: "1970-01-01T00:00:00Z",
      pve_version: "",
      status: "installing",
      random_id: "x",
      type: "lxc",
      error: "",
      hn: "",
      ssh: "",
      verbose: "",
      tags: "",
    });
  });

  test("countsObject and errorCountsBody", async () => {
    const counts = countsObject([
      { value: "b", total: 2 },
      { value: null, total: 1 },
      { value: "", total: 1 },
      { value: "a", total: 3 },
      { value: "z", total: 0 },
    ]);
    expect(Object.entries(counts)).toEqual([
      ["", 2],
      ["a", 3],
      ["b", 2],
    ]);
    expect(
      errorCountsBody([
        { error: "b", count: 2 },
        { error: "a", count: 2 },
        { error: "c", count: 5 },
        { error: null, count: 9 },
        { error: "", count: 9 },
      ]),
    ).toEqual({
      error_counts: [
        { error: "c", count: 5 },
        { error: "a", count: 2 },
        { error: "b", count: 2 },
      ],
    });
  });

  test("reuseWhileExpensive: cheap answers are always fresh; an expensive one is reused for 10x its cost", async () => {
    let now = 0;
    let version = "v1";
    let cost = 1;
    let runs = 0;
    const get = reuseWhileExpensive(
      async () => {
        runs++;
        now += cost;
        return runs;
      },
      async () => version,
      () => now,
    );
    expect(await get()).toBe(1);
    expect(await get()).toBe(1); // unchanged data: reused
    version = "v2";
    expect(await get()).toBe(2); // changed, cheap: recomputed
    cost = EXPENSIVE_MS * 2;
    version = "v3";
    expect(await get()).toBe(3); // took 100 ms
    version = "v4";
    now += 500;
    expect(await get()).toBe(3); // changed, but within 10x the cost
    now += 600;
    expect(await get()).toBe(4); // past it
  });
});

// Readers of the original API (the ProxmoxVE website's data page, tools written for it) know three
// words: installing, done, failed. Today's clients say success, aborted, validation, configuring;
// the first revision's clients also sent hn, ssh, verbose and tags, which its first page showed.
describe("today's runs in the original's words", () => {
  const v2 = (id: string, status: string, more: Record<string, unknown> = {}) => ({
    payload_version: 2,
    random_id: id,
    execution_id: id,
    type: "lxc",
    nsapp: "immich",
    os_type: "debian",
    os_version: "13",
    pve_version: "9.0.9",
    status,
    ...more,
  });
  const sent = async (t: TestApp) => {
    const ok = (r: { status: number }) => expect(r.status).toBeLessThan(300);
    at(t, "2026-11-20T10:00:00Z");
    for (const id of ["s1", "f1", "a1", "d1", "g1", "u1", "e1"]) ok(await t.post("/telemetry", v2(id, "installing")));
    ok(await t.post("/telemetry", { ...v2("d2", "installing"), payload_version: undefined })); // v1
    at(t, "2026-11-20T10:05:00Z");
    ok(await t.post("/telemetry", v2("s1", "success", { exit_code: 0 })));
    ok(
      await t.post(
        "/telemetry",
        v2("f1", "failed", { exit_code: 100, error: "exit_code=100 | apt", error_category: "dependency" }),
      ),
    );
    ok(
      await t.post(
        "/telemetry",
        v2("a1", "aborted", { exit_code: 130, error: "exit_code=130 | Ctrl-C", error_category: "user_aborted" }),
      ),
    );
    ok(
      await t.post(
        "/telemetry",
        v2("d1", "aborted", { exit_code: 254, error: "exit_code=254 | declined", error_category: "user_aborted" }),
      ),
    );
    ok(
      await t.post("/telemetry", {
        ...v2("d2", "failed", { exit_code: 113, error: "exit_code=113 | too small", error_category: "unknown" }),
        payload_version: undefined,
      }),
    );
    ok(await t.post("/telemetry", v2("g1", "configuring")));
    ok(await t.post("/telemetry", v2("u1", "unknown", { exit_code: 0 })));
    // A run given up on while going (the stuck-install job): installing, as the original (which never gave up) shows it.
    t.store.write([{ kind: "expire", executionId: "e1", at: Date.parse("2026-11-20T12:00:00Z") }]);
    // The first revision's client: its extra fields.
    ok(
      await t.post(
        "/upload",
        startReport("old1", {
          nsapp: "adguard",
          hn: "adguard",
          ssh: "no",
          verbose: "no",
          tags: "proxmox-helper-scripts;dns",
        }),
      ),
    );
    ok(await t.post("/upload/updatestatus", { status: "done", error: "none", random_id: "old1" }));
  };

  test("records, summary and the status filter speak done, failed and installing", async () => {
    const t = await testApp();
    const c = compatApp(t);
    await sent(t);
    const records = (await c.get("/data/json")).body as Rec[];
    const status = Object.fromEntries(records.map((r) => [r.random_id, r.status]));
    expect(status).toEqual({
      s1: "done",
      f1: "failed",
      a1: "failed",
      d1: "failed",
      d2: "failed",
      g1: "installing",
      u1: "unknown",
      e1: "installing",
      old1: "done",
    });
    // The data page's numbers: done over total is the success rate it shows.
    const summary = (await c.get("/data/summary")).body as {
      total_entries: number;
      status_count: Record<string, number>;
    };
    expect(summary).toMatchObject({
      total_entries: 9,
      status_count: { done: 2, failed: 4, installing: 2, unknown: 1 },
    });
    expect(Object.keys(summary.status_count)).toEqual(["done", "failed", "installing", "unknown"]);
    const ofStatus = async (s: string) => ids((await c.get(`/data/status?status=${s}`)).body);
    expect(await ofStatus("done")).toEqual(["s1", "old1"]);
    expect(await ofStatus("Failed")).toEqual(["f1", "a1", "d1", "d2"]);
    expect(await ofStatus("installing")).toEqual(["g1", "e1"]);
    expect(await ofStatus("unknown")).toEqual(["u1"]);
    for (const word of ["success", "aborted", "configuring", ""]) expect(await ofStatus(word), word).toEqual([]);
    // Every list carries the same words.
    expect(((await c.get("/data/nsapp?nsapp=immich")).body as Rec[]).map((r) => r.status)).toEqual([
      "done",
      "failed",
      "failed",
      "failed",
      "installing",
      "unknown",
      "installing",
      "failed",
    ]);
  });

  test('the first revision\'s fields, as its client sent them; "" for every other client (its page calls .replace on tags)', async () => {
    const t = await testApp();
    const c = compatApp(t);
    await sent(t);
    const records = (await c.get("/data/json")).body as Rec[];
    expect(records.find((r) => r.random_id === "old1")).toMatchObject({
      hn: "adguard",
      ssh: "no",
      verbose: "no",
      tags: "proxmox-helper-scripts;dns",
      status: "done",
    });
    for (const r of records.filter((r) => r.random_id !== "old1"))
      expect([r.hn, r.ssh, r.verbose, r.tags]).toEqual(["", "", "", ""]);
    // What its page does with every record: a search over every value, and tags split on ";".
    for (const r of records) {
      expect(() => Object.values(r).some((v) => String(v).toString().toLowerCase().includes("x"))).not.toThrow();
      expect((r.tags as string).replace(/;/g, " ")).toBeString();
    }
  });
});
