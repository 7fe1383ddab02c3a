// Hostile reads (issue 15, items 1, 2 and 5): every read parameter is checked before any work and
// refused with 400 naming it and what it accepts; no request allocates in proportion to a number
// the client chose; client strings never reach an object prototype; rate limiting is on by
// default; logs are rate-limited.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { defaults, type Config } from "../../src/config.ts";
import { HOUR } from "../../src/domain/time.ts";
import { storedAndRead } from "../helpers/cells.ts";
import { BREAKDOWN_DIMENSIONS, addRecord, emptyData, mergeInto } from "../../src/domain/rollup.ts";
import { createLogger } from "../../src/log.ts";
import { createRuntime } from "../../src/runtime.ts";
import { openSqliteEngine } from "../../src/store/sqlite/engine.ts";
import { compiledBinary, startServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";

type Body = Record<string, unknown>;

/** [path and query, the parameter named, a piece of the message naming what it accepts] */
const REFUSED: [string, string, string][] = [
  // /api/installs: limit 1-500, strictly whole numbers.
  ...["-1", "1e9", "1e309", "0", "501", "1.5", "abc", "", "0x10", "+5", " 5", "Infinity", "NaN"].map(
    (v): [string, string, string] => [`/api/installs?limit=${encodeURIComponent(v)}`, "limit", "from 1 to 500"],
  ),
  ["/api/installs?cursor=bogus", "cursor", "next_cursor"],
  [`/api/installs?cursor=${"A".repeat(65)}`, "cursor", "1 to 64 characters"],
  [`/api/installs?cursor=${Buffer.from("99999999999999999.1").toString("base64url")}`, "cursor", "next_cursor"],
  ["/api/installs?order=sideways", "order", "one of newest, oldest"],
  ["/api/installs?signature=%3Cscript%3E", "signature", "16 lowercase hex digits"],
  [`/api/installs/${"x".repeat(129)}`, "random_id", "1 to 128 characters"],
  // Windows.
  ...[
    "/api/stats/summary",
    "/api/stats/errors",
    "/api/stats/timeseries",
    "/api/stats/breakdown?by=os&",
    "/api/installs",
    "/api/export",
  ].flatMap((p): [string, string, string][] => {
    const q = p.includes("?") ? p : `${p}?`;
    return [
      [`${q}days=1e9`, "days", "from 1 to 3660"],
      [`${q}days=0`, "days", "from 1 to 3660"],
      [`${q}days=-7`, "days", "from 1 to 3660"],
      [`${q}days=1.5`, "days", "from 1 to 3660"],
      [`${q}days=3661`, "days", "from 1 to 3660"],
      [`${q}from=0000-01-01`, "from", "1970-01-01 to 2999-12-31"],
      [`${q}from=1969-12-31`, "from", "1970-01-01 to 2999-12-31"],
      [`${q}to=1e9`, "to", "1970-01-01 to 2999-12-31"],
      [`${q}to=3000-01-01`, "to", "1970-01-01 to 2999-12-31"],
      [`${q}from=2026-02-30`, "from", "ISO 8601"],
      [`${q}from=2026-06-01T25:00`, "from", "ISO 8601"],
      [`${q}from=yesterday`, "from", "ISO 8601"],
      [`${q}from=${"2".repeat(65)}`, "from", "1 to 64 characters"],
      [`${q}days=3&from=2026-01-01`, "days", "either days or from/to"],
      [`${q}from=2026-05-01&to=2026-04-01`, "from", "before to"],
      [`${q}exit_code=256`, "exit_code", "from 0 to 255"],
      [`${q}exit_code=1.5`, "exit_code", "from 0 to 255"],
      [`${q}kind=everything`, "kind", "one of install, tool, addon, all"],
      [`${q}outcome=great`, "outcome", "one of success, failed, aborted, in_progress, unknown"],
      [`${q}nsapp=${"n".repeat(129)}`, "nsapp", "at most 128 characters"],
      [`${q}q=${"q".repeat(201)}`, "q", "1 to 200 characters"],
    ];
  }),
  // Intervals and the points of a timeseries.
  ["/api/stats/timeseries?interval=year", "interval", "one of hour, day, week"],
  ["/api/stats/timeseries?interval=hour&days=32", "interval", "at most 31 days"],
  ["/api/stats/timeseries?from=1970-01-01", "interval", "at most 4000 points"],
  ["/api/stats/timeseries?interval=day&days=3660&to=2999-12-31", "days", "either days or from/to"],
  // Breakdown and the other lists.
  ["/api/stats/breakdown?by=color", "by", `one of ${BREAKDOWN_DIMENSIONS.join(", ")}`],
  ["/api/stats/breakdown", "by", "by must be one of nsapp, os"],
  ["/api/stats/breakdown?by=os&sort=random", "sort", "one of volume, failure_rate"],
  ["/api/stats/breakdown?by=os&min_runs=-1", "min_runs", "from 0 to 1000000000"],
  ["/api/stats/breakdown?by=os&limit=1001", "limit", "from 1 to 1000"],
  ["/api/stats/errors?limit=1e309", "limit", "from 1 to 1000"],
  ["/api/stats/top-apps?limit=0", "limit", "from 1 to 1000"],
  // A parameter the path does not take (Elysia would drop it, and a misspelt filter read everything).
  ["/api/installs?stauts=failed", "stauts", "this path takes nsapp, status,"],
  ["/api/stats/summary?days=7&app=jellyfin", "app", "this path takes nsapp,"],
  ["/api/stats/breakdown?by=os&group=os", "group", "by, sort, min_runs, limit"],
  ["/api/stats/timeseries?step=hour", "step", "interval"],
  ["/api/stats/errors?signature=0123456789abcdef", "signature", "limit"],
  ["/api/stats/top-apps?days=30", "days", "this path takes limit"],
  ["/api/export?fromat=csv", "fromat", "format"],
  [`/api/installs?${"k".repeat(300)}=1`, "k".repeat(40), "unknown parameter"],
];

/** Values that are members of Object.prototype (or the setter of it). */
const PROTO_KEYS = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"];

const total = (points: unknown) => (points as { total: number }[]).reduce((s, p) => s + p.total, 0);

describe("every read parameter is checked before any work", () => {
  test("400 invalid_field naming the parameter and what it accepts, in the one error shape", async () => {
    const t = await testApp();
    const wrong: unknown[] = [];
    for (const [path, field, fragment] of REFUSED) {
      const res = await t.get(path);
      const ok =
        res.status === 400 &&
        res.body.error === "invalid_field" &&
        res.body.field === field &&
        String(res.body.message).includes(fragment) &&
        Object.keys(res.body).sort().join() === "error,field,message";
      if (!ok) wrong.push({ path, want: { field, fragment }, got: { status: res.status, body: res.body } });
    }
    expect(wrong).toEqual([]);
    expect(REFUSED.length).toBeGreaterThan(150);
    // A refusal is the client's error, not the server's: nothing of it in the error log.
    expect(t.logLines.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  });

  test("the bounds themselves are accepted", async () => {
    const t = await testApp();
    for (const path of [
      "/api/installs?limit=1",
      "/api/installs?limit=500",
      "/api/installs?limit=050",
      "/api/stats/summary?days=1",
      "/api/stats/summary?days=3660",
      "/api/stats/summary?from=1970-01-01",
      "/api/stats/summary?from=2026-05-01T10:00%2B02:00&to=2026-05-02T08:30:15.5Z",
      "/api/stats/summary?from=2026-05-01T10:00%2B0200&to=2999-12-31",
      "/api/stats/timeseries?interval=hour&days=31",
      "/api/stats/timeseries?interval=day&days=3660",
      "/api/stats/timeseries?interval=week&from=1970-01-01",
      "/api/stats/breakdown?by=failed_command&min_runs=0&limit=1000",
      "/api/stats/errors?limit=1000&exit_code=255",
      "/api/stats/top-apps?limit=1000",
      "/api/installs?kind=all&outcome=in_progress&exit_code=0",
    ]) {
      const res = await t.get(path);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
    // The community service's paths and the old /data/* ones ignore what they do not know, as the originals do.
    for (const path of [
      "/api/records?foo=1",
      "/api/dashboard?foo=1",
      "/api/scripts?foo=1",
      "/api/errors?foo=1",
      "/data/summary?foo=1",
      "/data/json?foo=1",
    ]) {
      expect({ path, status: (await t.get(path)).status }).toEqual({ path, status: 200 });
    }
    const series = await t.get("/api/stats/timeseries?interval=day&days=3660");
    expect((series.body.points as unknown[]).length).toBe(3661);
  });
});

describe("no request allocates in proportion to a number the client chose", () => {
  test("the former killers answer 400 at once; a page never holds more than 500 records", async () => {
    const t = await testApp();
    await Promise.all(
      Array.from({ length: 600 }, (_, i) => t.post("/upload", JSON.stringify(startReport(`page-${i}`)))),
    );
    expect((await t.get("/api/installs?limit=500")).body.installs).toHaveLength(500);
    const rssBefore = process.memoryUsage.rss();
    for (const path of [
      "/api/stats/timeseries?days=1e9",
      "/api/stats/timeseries?from=0000-01-01",
      "/api/stats/timeseries?interval=hour&from=1970-01-01",
      "/api/stats/summary?days=1e9",
      "/api/stats/errors?days=1e9",
      "/api/installs?limit=-1",
      "/api/installs?limit=1e9",
      "/api/installs?limit=1e309",
    ]) {
      const started = performance.now();
      const res = await t.get(path);
      const ms = performance.now() - started;
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(ms).toBeLessThan(200);
    }
    expect(process.memoryUsage.rss() - rssBefore).toBeLessThan(64 * 1024 * 1024);
  });
});

describe("client strings never touch object prototypes", () => {
  /** Two reports per prototype key in every free-text dimension, and three ordinary ones. */
  async function ingest(post: (path: string, body: string) => Promise<{ status: number }>) {
    for (const key of PROTO_KEYS) {
      for (const n of [1, 2]) {
        const body = startReport(`proto-${key}-${n}`, {
          nsapp: key,
          method: key,
          pve_version: key,
          os_type: key,
          os_version: key,
        });
        expect((await post("/upload", JSON.stringify(body))).status).toBe(201);
        // A status nobody knows: stored as sent (lowercased), outcome unknown.
        expect(
          (await post("/upload/updatestatus", JSON.stringify({ random_id: `proto-${key}-${n}`, status: key }))).status,
        ).toBe(200);
        const tel = {
          random_id: `tel-${key}-${n}`,
          type: "lxc",
          nsapp: "plain",
          status: "installing",
          arch: key,
          cpu_vendor: key,
          repo_slug: key,
          app_version: key,
          kernel_version: key,
          gpu_passthrough: key,
          payload_version: 2,
        };
        expect((await post("/telemetry", JSON.stringify(tel))).status).toBe(201);
      }
    }
    for (const n of [1, 2, 3])
      expect((await post("/upload", JSON.stringify(startReport(`plain-${n}`)))).status).toBe(201);
    for (const n of [1, 2])
      expect(
        (await post("/upload/updatestatus", JSON.stringify({ random_id: `plain-${n}`, status: "done" }))).status,
      ).toBe(200);
  }

  /** Every read that keys by these values counts them exactly (2 each). */
  async function check(get: (path: string) => Promise<{ status: number; body: Body }>) {
    const all = await get("/api/stats/summary?days=7");
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(PROTO_KEYS.length * 4 + 3);
    for (const key of PROTO_KEYS) {
      const k = encodeURIComponent(key);
      for (const dim of [
        "status",
        "method",
        "pve_version",
        "nsapp",
        "arch",
        "cpu_vendor",
        "repo_slug",
        "app_version",
        "kernel_version",
        "gpu_passthrough",
      ]) {
        const series = await get(`/api/stats/timeseries?days=7&${dim}=${k}`);
        expect({ key, dim, status: series.status, total: total(series.body.points) }).toEqual({
          key,
          dim,
          status: 200,
          total: 2,
        });
        const summary = await get(`/api/stats/summary?days=7&${dim}=${k}`);
        expect({ key, dim, status: summary.status, total: summary.body.total }).toEqual({
          key,
          dim,
          status: 200,
          total: 2,
        });
      }
      // A value nobody sent, where a plain object would answer with Object.prototype's member.
      for (const dim of ["type", "platform", "error_category"]) {
        const none = await get(`/api/stats/timeseries?days=7&${dim}=${k}`);
        expect({ key, dim, status: none.status, total: total(none.body.points) }).toEqual({
          key,
          dim,
          status: 200,
          total: 0,
        });
      }
      const os = await get(`/api/stats/summary?days=7&os_type=${k}&os_version=${k}`);
      expect({ key, total: os.body.total }).toEqual({ key, total: 2 });
      const app = await get(`/api/stats/breakdown?days=7&by=status&nsapp=${k}`);
      expect({ key, groups: app.body.groups }).toEqual({
        key,
        groups: [expect.objectContaining({ value: key.toLowerCase(), total: 2 })],
      });
      expect(((await get(`/api/installs?method=${k}`)).body.installs as unknown[]).length).toBe(2);
    }
    for (const by of ["status", "method", "pve_version", "nsapp", "os", "arch", "repo_slug"]) {
      const res = await get(`/api/stats/breakdown?days=7&by=${by}&limit=1000&kind=all`);
      expect(res.status).toBe(200);
      const groups = res.body.groups as { value: string; total: number }[];
      for (const key of PROTO_KEYS) {
        // status, os type and arch are stored lowercase ("tostring"); the others as sent.
        const value =
          by === "os" ? `${key.toLowerCase()} ${key}` : by === "status" || by === "arch" ? key.toLowerCase() : key;
        expect({ by, value, total: groups.find((g) => g.value === value)?.total }).toEqual({ by, value, total: 2 });
      }
    }
    // (/data/summary's nsapp_count: "constructor" is there; "__proto__" is dropped by Elysia's
    // response normalization of t.Record, outside these files: see docs/decisions/2026-11-24-hostile-reads-rate-limit-pipelining.md.)
    const compat = await get("/data/summary");
    expect(new Map(Object.entries(compat.body.nsapp_count as Record<string, number>)).get("constructor")).toBe(2);
  }

  const unpolluted = () => {
    expect(Object.getOwnPropertyNames(Object.prototype).filter((n) => /^\d+$/.test(n))).toEqual([]);
    expect(({} as Record<string, unknown>)[0]).toBeUndefined();
    expect(typeof Object.prototype.toString).toBe("function");
  };

  test("in memory (open hours): stored, counted and read back as their own keys", async () => {
    const t = await testApp();
    await ingest((p, b) => t.post(p, b));
    await check((p) => t.get(p));
    unpolluted();
  });

  test("end to end through the stored rollup JSON: folded, closed, reopened, read", async () => {
    const dir = tempDir("installstats-proto-");
    const path = join(dir, "proto.db");
    let now = Date.parse("2026-06-01T12:00:00Z");
    const clock = () => now;
    const log = createLogger("error", () => {}, clock);
    const open = async () => {
      const engine = openSqliteEngine(path, { durability: "normal", migrate: true });
      return {
        engine,
        runtime: await createRuntime(
          { ...defaults, db: path } as Config,
          { clock, log, version: "0.0.0-test" },
          engine,
        ),
      };
    };
    const send = (runtime: Awaited<ReturnType<typeof open>>["runtime"]) => ({
      post: async (p: string, body: string) => {
        const res = await runtime.app.handle(
          new Request(`http://localhost${p}`, {
            method: "POST",
            body,
            headers: { "content-type": "application/json" },
          }),
        );
        return { status: res.status, body: (await res.json()) as Body };
      },
      get: async (p: string) => {
        const res = await runtime.app.handle(new Request(`http://localhost${p}`));
        return { status: res.status, body: (await res.json()) as Body };
      },
    });
    const first = await open();
    first.engine.sqlite.run("UPDATE rollup_state SET folded_until = ?", [now - (now % HOUR)]);
    await ingest(send(first.runtime).post);
    now += 2 * HOUR;
    const folded = await first.runtime.writer.submit({ kind: "fold", until: now - (now % HOUR), at: now });
    expect(folded).toMatchObject({ kind: "folded" });
    // Cells hold their texts as ids of the label dictionary: the prototype keys are stored there.
    const stored = first.engine.sqlite
      .query("SELECT count(*) AS n FROM rollup_labels WHERE label = '__proto__'")
      .get() as { n: number };
    expect(stored.n).toBeGreaterThan(0);
    await first.runtime.stop();

    const second = await open();
    await check(send(second.runtime).get);
    await second.runtime.stop();
    unpolluted();
  });

  test("rollup cells: parsed, merged and counted with prototype keys, equal to a recount", () => {
    const r = (value: string) =>
      ({
        nsapp: value,
        osType: value,
        osVersion: value,
        pveVersion: value,
        type: "lxc",
        method: value,
        status: value,
        ctType: 1,
        coreCount: 1,
        ramSize: 512,
        outcome: "failed",
        createdAt: 0,
        durationMs: 5000,
        error: "x",
        exitCode: 1,
        errorCategory: value,
        platform: value,
        arch: value,
        cpuVendor: value,
        gpuVendor: value,
        gpuPassthrough: value,
        hostGpu: value,
        repoSource: value,
        repoSlug: value,
        appVersion: value,
        kernelVersion: value,
        attempt: 1,
        failedCommand: value,
        diskSize: 8,
        payloadVersion: 2,
        hasArm: false,
      }) as const;
    const direct = emptyData();
    for (const key of PROTO_KEYS)
      for (let i = 0; i < 3; i++) addRecord(direct, r(key), "failed", 1, true, "0123456789abcdef");
    // Stored as JSON, parsed back, merged into a fresh cell and into a parsed one: the same counts.
    const parsed = storedAndRead(direct);
    const merged = mergeInto(emptyData(), parsed);
    mergeInto(storedAndRead(emptyData()), parsed);
    for (const cell of [direct, parsed, merged]) {
      for (const key of PROTO_KEYS) {
        expect(Object.hasOwn(cell.dims.method!, key)).toBe(true);
        expect(cell.dims.method![key]).toEqual([0, 3, 0, 0, 0, 0]);
        expect(cell.dims.nsapp![key]).toEqual([0, 3, 0, 0, 0, 0]);
      }
    }
    // Removing them all leaves nothing behind, as a recount would.
    for (const key of PROTO_KEYS)
      for (let i = 0; i < 3; i++) addRecord(parsed, r(key), "failed", -1, true, "0123456789abcdef");
    expect(Object.keys(parsed.dims)).toEqual([]);
    unpolluted();
  });
});

describe("rate limiting, on by default", () => {
  test("defaults: 5 per second with a burst of 60 per address, as the community's service (300/min)", () => {
    expect({ rate: defaults.rateLimit, burst: defaults.rateBurst }).toEqual({ rate: 5, burst: 60 });
  });

  test("a client past its burst gets 429 with Retry-After; real runs, this host and another client do not", async () => {
    const t: TestApp = await testApp({ rateLimit: defaults.rateLimit, rateBurst: defaults.rateBurst });
    t.app.listen({ hostname: "127.0.0.1", port: 0 });
    try {
      const url = `http://127.0.0.1:${t.app.server!.port}`;
      // A proxy on this host (loopback peer): its X-Forwarded-For names the client.
      const post = (id: string, client?: string) =>
        fetch(`${url}/upload`, {
          method: "POST",
          headers: { "content-type": "application/json", ...(client ? { "x-forwarded-for": client } : {}) },
          body: JSON.stringify(startReport(id)),
        });
      // Ten installer runs of 6 reports each from one address, all at once: within the burst.
      const runs = await Promise.all(
        Array.from({ length: 60 }, (_, i) => post(`run-${i}`, "198.51.100.1").then((r) => r.status)),
      );
      expect(runs.every((s) => s === 201)).toBe(true);
      const limited = await post("run-61", "198.51.100.1");
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(await limited.json()).toMatchObject({ error: "rate_limited" });
      expect((await post("other", "198.51.100.2")).status).toBe(201);
      // This host itself (no forwarded address) is never limited: local tools, benchmarks.
      const local = await Promise.all(Array.from({ length: 80 }, (_, i) => post(`local-${i}`).then((r) => r.status)));
      expect(local.every((s) => s === 201)).toBe(true);
    } finally {
      await t.app.stop(true);
    }
  });

  test("off with one setting", async () => {
    const t = await testApp({ rateLimit: 0 });
    t.app.listen({ hostname: "127.0.0.1", port: 0 });
    try {
      const url = `http://127.0.0.1:${t.app.server!.port}`;
      const statuses = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          fetch(`${url}/upload`, {
            method: "POST",
            headers: { "x-forwarded-for": "198.51.100.9" },
            body: JSON.stringify(startReport(`off-${i}`)),
          }).then((r) => r.status),
        ),
      );
      expect(statuses.every((s) => s === 201)).toBe(true);
    } finally {
      await t.app.stop(true);
    }
  });
});

describe("logs are rate-limited", () => {
  test("a flood of one message writes a burst, then one line per 10 s carrying the count dropped", () => {
    let now = 0;
    const lines: string[] = [];
    const log = createLogger(
      "info",
      (l) => lines.push(l),
      () => now,
    );
    // 54,000 errors in 8 s (what a full disk wrote before) and an unrelated line among them.
    for (let i = 0; i < 54_000; i++) {
      now = Math.floor((i / 54_000) * 8000);
      log.error("storage unavailable", { path: "/upload" });
      if (i === 30_000) log.info("listening");
    }
    expect(lines.length).toBe(20 + 1);
    expect(lines.filter((l) => l.includes("listening"))).toHaveLength(1);
    now = 20_000;
    log.error("storage unavailable", { path: "/upload" });
    const last = JSON.parse(lines.at(-1)!);
    expect(last).toMatchObject({ msg: "storage unavailable", suppressed: 54_000 - 20 });
    // Other messages keep their own budget.
    log.warn("something else");
    expect(lines.at(-1)).toContain("something else");
  });
});

describe("the compiled binary", () => {
  test("former killers: 400 at once, RSS unchanged, the server still answers", async () => {
    const bin = await compiledBinary();
    const dir = tempDir("installstats-killers-");
    const db = join(dir, "k.db");
    expect(Bun.spawnSync([bin, "seed", "--db", db, "--records", "20000", "--days", "400"]).exitCode).toBe(0);
    const s = await startServer(bin, ["--db", db]);
    try {
      const status = (field: string) =>
        Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${s.proc.pid}/status`, "utf8"))![1]) * 1024;
      const rss = () => status("VmRSS");
      const hwm = () => status("VmHWM");
      await fetch(`${s.url}/api/stats/summary`);
      const before = { rss: rss(), hwm: hwm() };
      const timings: Record<string, number> = {};
      for (const path of [
        "/api/stats/timeseries?days=1e9",
        "/api/stats/timeseries?from=0000-01-01",
        "/api/stats/summary?days=1e9",
        "/api/stats/errors?days=1e9",
        "/api/installs?limit=-1",
        "/api/installs?limit=1e9",
        "/api/installs?limit=1e309",
        "/api/installs?limit=0",
        "/api/installs?limit=501",
        "/api/installs?limit=1.5",
        `/api/stats/timeseries?status=__proto__`,
        `/api/stats/timeseries?method=constructor`,
        `/api/stats/timeseries?pve_version=toString`,
        `/api/stats/timeseries?type=__proto__`,
      ]) {
        const started = performance.now();
        const res = await fetch(`${s.url}${path}`);
        const body = (await res.json()) as Body;
        timings[path] = Math.round(performance.now() - started);
        expect({ path, status: res.status < 500 }).toEqual({ path, status: true });
        if (!path.includes("=__proto__") && !path.includes("=constructor") && !path.includes("=toString"))
          expect({ path, status: res.status, error: body.error }).toEqual({
            path,
            status: 400,
            error: "invalid_field",
          });
      }
      const after = { rss: rss(), hwm: hwm() };
      console.log(
        `binary, 20k records: ${JSON.stringify(timings)} ms; RSS ${(before.rss / 2 ** 20).toFixed(0)} -> ${(after.rss / 2 ** 20).toFixed(0)} MB, peak ${(before.hwm / 2 ** 20).toFixed(0)} -> ${(after.hwm / 2 ** 20).toFixed(0)} MB`,
      );
      expect(Math.max(...Object.values(timings))).toBeLessThan(1000);
      expect(after.hwm - before.hwm).toBeLessThan(64 * 2 ** 20);
      const page = (await (await fetch(`${s.url}/api/installs?limit=500`)).json()) as { installs: unknown[] };
      expect(page.installs).toHaveLength(500);
      expect(s.stderr()).not.toContain("unhandled error");
    } finally {
      await s.stop();
    }
  }, 60_000);
});
