// import --url (issue 26): every page of GET /api/records of a server that answers the community
// telemetry service's read API, over HTTP. The source is another installstats, filled through its
// own ingestion: the round trip (its /api/records, imported into a fresh installstats on either
// engine, listed again by that one's /api/records) gives the same records, with the attempt
// numbers and durations of the source; runs that were going end when they end at the source.
// A listing server in front of the same records fails requests (retries with backoff), goes down
// (the import stops, keeps its position in the database, and resumes from it), and loses its
// oldest records midway as midnight takes a day out of the window (the importer finds its place).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { defaults } from "../../src/config.ts";
import type { JsonObject } from "../../src/domain/json.ts";
import { createLogger } from "../../src/log.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { createRuntime } from "../../src/runtime.ts";
import type { Store } from "../../src/store/contract/store.ts";
import { openEngine } from "../../src/store/open.ts";
import { SourceError, importFromApi, type ApiSummary } from "../../src/transfer/telemetry-service-api.ts";
import { postgresForFile } from "../helpers/postgres.ts";
import { testApp, type TestApp } from "../helpers/app.ts";

setDefaultTimeout(120_000);

const NORMALIZE = { maxFieldLength: defaults.maxFieldLength, maxErrorLength: defaults.maxErrorLength, maskIps: true };
const MIN = 60_000;

const v2 = (randomId: string, status: string, more: Record<string, unknown> = {}) => ({
  payload_version: 2,
  random_id: randomId,
  execution_id: randomId,
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
  cpu_vendor: "amd",
  cpu_model: "Ryzen 7",
  gpu_vendor: "intel",
  gpu_passthrough: "yes",
  ram_speed: "4800",
  arch: "amd64",
  platform: "pve",
  repo_source: "ProxmoxVE",
  repo_slug: "community-scripts/ProxmoxVE",
  ...more,
});

/** An installstats filled through its own ingestion with every kind of run, `groups` times over (about 1.2 executions each). */
async function filledSource(groups: number): Promise<{ t: TestApp; going: string[] }> {
  const t = await testApp();
  const post = async (path: string, body: object) => {
    const r = await t.post(path, body);
    expect(r.status).toBeLessThan(300);
  };
  const going: string[] = [];
  for (let i = 0; i < groups; i++) {
    const id = `src-${String(i).padStart(4, "0")}`;
    const step = () => t.clock.advance(MIN);
    switch (i % 8) {
      case 0: // a failure and its retry
        await post("/telemetry", v2(id, "installing"));
        step();
        await post("/telemetry", v2(id, "validation"));
        step();
        await post(
          "/telemetry",
          v2(id, "failed", {
            exit_code: 100,
            error: `exit_code=100 | APT failed\n---\nE: "quoted" \\ back\ttab ${"🚀".repeat(i % 5)}\n${"log line\n".repeat(i % 40)}`,
            error_category: "dependency",
            failed_command: "apt-get install -y x",
            failed_line: 12,
          }),
        );
        step();
        await post("/telemetry", v2(id, "installing", { execution_id: `${id}-retry` }));
        step();
        await post(
          "/telemetry",
          v2(id, "success", { execution_id: `${id}-retry`, exit_code: 0, install_duration: 60 }),
        );
        break;
      case 1: // v1: the host's GPU kind
        await post("/telemetry", {
          random_id: id,
          type: "vm",
          nsapp: "haos-vm",
          status: "installing",
          gpu_passthrough: "igpu",
          ct_type: 2,
          disk_size: 32,
        });
        step();
        await post("/telemetry", {
          random_id: id,
          type: "vm",
          nsapp: "haos-vm",
          status: "success",
          gpu_passthrough: "igpu",
          ct_type: 2,
        });
        break;
      case 2: // aborted by the user
        await post("/telemetry", v2(id, "installing", { nsapp: "docker" }));
        step();
        await post("/telemetry", v2(id, "failed", { nsapp: "docker", exit_code: 130, error: "INTERRUPTED" }));
        break;
      case 3: // a host tool and an addon
        await post("/telemetry", v2(id, "success", { type: "pve", nsapp: "post-pve-install", exit_code: 0 }));
        await post(
          "/telemetry",
          v2(`${id}-addon`, "failed", { type: "addon", nsapp: "netdata", exit_code: 1, error: "exit_code=1 | x" }),
        );
        break;
      case 4: // the old protocol
        await post("/upload", {
          type: "lxc",
          nsapp: "adguard",
          random_id: id,
          status: "installing",
          disk_size: 4,
          core_count: 1,
          ram_size: 512,
          os_type: "debian",
          os_version: "12",
          method: "default",
          pve_version: "8.2.2",
        });
        step();
        await post("/upload/updatestatus", { random_id: id, status: "failed", error: "exit code 1: something" });
        break;
      case 5: // still going
        await post("/telemetry", v2(id, "installing", { nsapp: "immich" }));
        step();
        await post("/telemetry", v2(id, "configuring", { nsapp: "immich" }));
        going.push(id);
        break;
      case 6: // a final report before its start: no duration
        await post(
          "/telemetry",
          v2(id, "failed", { nsapp: "pihole", exit_code: 6, error: "exit_code=6 | Could not resolve host" }),
        );
        step();
        await post("/telemetry", v2(id, "installing", { nsapp: "pihole" }));
        break;
      case 7: // timed out by the stuck-install job
        await post("/telemetry", v2(id, "installing", { nsapp: "nextcloud" }));
        step();
        expect(await t.store.write([{ kind: "expire", executionId: id, at: t.clock() }])).toEqual([
          { kind: "expired", changed: true },
        ]);
        break;
    }
    step();
  }
  return { t, going };
}

type Handle = (request: Request) => Response | Promise<Response>;

/** Every record of a server's /api/records, oldest first (`byId`: records of the same millisecond by execution id, where the listing puts the latest stored first). */
async function listing(handle: Handle, byId = false): Promise<JsonObject[]> {
  const out: JsonObject[] = [];
  for (let page = 1; ; page++) {
    const res = await handle(
      new Request(`http://localhost/api/records?days=0&repo=all&sort=created&limit=100&page=${page}`),
    );
    const body = (await res.json()) as { records: JsonObject[] };
    out.push(...body.records);
    if (body.records.length < 100) break;
  }
  const key = (r: JsonObject) => `${String(r.created)} ${String(r.execution_id)}`;
  return byId ? out.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)) : out;
}

/** Serves `handle` on a free port of 127.0.0.1. */
function listen(handle: Handle) {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => handle(req) });
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

async function attemptsOf(store: Pick<Store, "executionChunks">) {
  const out: Record<string, [number, number | null, string]> = {};
  for await (const chunk of store.executionChunks({}))
    for (const e of chunk) out[e.executionId] = [e.attempt, e.durationMs, e.outcome];
  return out;
}

const pg = postgresForFile();

describe("import --url from another installstats", () => {
  for (const engineName of ["sqlite", "postgres"] as const) {
    test(`round trip on ${engineName}: the same records through /api/records, attempts and durations; what was going ends later; again = nothing new`, async () => {
      const { t: source, going } = await filledSource(250);
      const served = listen((req) => source.app.handle(req));
      const location = engineName === "sqlite" ? ":memory:" : await pg.database();
      const engine = await openEngine(location, { durability: "normal", migrate: true, create: true });
      const target = await createRuntime(
        { ...defaults, db: location },
        { clock: source.clock, log: createLogger("error", () => {}, source.clock), version: "0.0.0-test" },
        engine,
      );
      const deps = { reads: target.store, commit: (ops: Parameters<Store["write"]>[0]) => target.store.write(ops) };
      try {
        const expected = await listing((req) => source.app.handle(req));
        expect(expected.length).toBeGreaterThan(250); // three pages and more
        const s1 = await importFromApi(deps, served.url, { normalize: NORMALIZE, zone: "UTC", at: source.clock() });
        expect(s1).toMatchObject({
          records: expected.length,
          imported: expected.length,
          updated: 0,
          alreadyThere: 0,
          relocations: 0,
          refused: {},
          resumedAfter: null,
        });
        expect(await listing((req) => target.app.handle(req), true)).toEqual(
          await listing((req) => source.app.handle(req), true),
        );
        expect(await attemptsOf(target.store)).toEqual(await attemptsOf(source.store));
        expect(await verifyRollups(target.store)).toMatchObject({ ok: true, records: expected.length });

        // The runs that were going end at the source; the next run reads from the first of them and takes how they ended.
        for (const id of going)
          expect((await source.post("/telemetry", v2(id, "success", { nsapp: "immich", exit_code: 0 }))).status).toBe(
            200,
          );
        source.clock.advance(MIN);
        const s2 = await importFromApi(deps, served.url, { normalize: NORMALIZE, zone: "UTC", at: source.clock() });
        expect(s2.resumedAfter).not.toBeNull();
        expect(s2).toMatchObject({ imported: 0, updated: going.length, refused: {} });
        expect(s2.records).toBeLessThan(expected.length); // resumed, not read again from the start
        expect(await listing((req) => target.app.handle(req), true)).toEqual(
          await listing((req) => source.app.handle(req), true),
        );
        expect(await attemptsOf(target.store)).toEqual(await attemptsOf(source.store));

        const s3 = await importFromApi(deps, served.url, { normalize: NORMALIZE, zone: "UTC", at: source.clock() });
        expect(s3).toMatchObject({ imported: 0, updated: 0 });
        const s4 = await importFromApi(deps, served.url, {
          normalize: NORMALIZE,
          zone: "UTC",
          at: source.clock(),
          fromStart: true,
        });
        expect(s4).toMatchObject({ records: expected.length, imported: 0, updated: 0, alreadyThere: expected.length });
        expect(await verifyRollups(target.store)).toMatchObject({ ok: true, records: expected.length });
      } finally {
        served.stop();
        await target.stop();
        await source.stop();
      }
    });
  }
});

/** A listing server over fixed records, with faults to order: failures, an outage, records leaving at the front. */
function flakyListing(all: JsonObject[]) {
  const state = { records: [...all], failNext: 0, down: false, pages: 0, onPage: (_n: number) => {} };
  const handle: Handle = (req) => {
    const url = new URL(req.url);
    if (url.pathname !== "/api/records") return new Response("not found", { status: 404 });
    if (state.down) return new Response("upstream down", { status: 502 });
    if (state.failNext > 0) {
      state.failNext--;
      return new Response("busy", { status: 503, headers: { "retry-after": "0" } });
    }
    const limit = Number(url.searchParams.get("limit"));
    const page = Number(url.searchParams.get("page"));
    const records = state.records.slice((page - 1) * limit, page * limit);
    const body = {
      records,
      page,
      limit,
      total: state.records.length,
      total_pages: Math.ceil(state.records.length / limit),
    };
    if (limit > 1) state.onPage(++state.pages); // after this page is answered
    return Response.json(body);
  };
  return { state, handle };
}

describe("import --url against a listing that fails, goes down and moves", () => {
  test("retries with backoff; an outage stops it with its position kept; the next run resumes there and finds its place when the listing shifts", async () => {
    const { t: source } = await filledSource(300);
    const all = await listing((req) => source.app.handle(req));
    const flaky = flakyListing(all);
    const served = listen(flaky.handle);
    const engine = await openEngine(":memory:", { durability: "normal", migrate: true, create: true });
    const store = engine.store;
    const deps = { reads: store, commit: (ops: Parameters<Store["write"]>[0]) => store.write(ops) };
    const retries: string[] = [];
    // Two days on: the runs the source shows going are old news and do not hold the position back.
    const opts = {
      normalize: NORMALIZE,
      zone: "UTC",
      at: source.clock() + 2 * 24 * 60 * MIN,
      backoffMs: 1,
      attempts: 4,
      onRetry: (e: string) => retries.push(e),
    };
    try {
      // Two failures answered by retries; after two pages the server goes down for good.
      flaky.state.failNext = 2;
      flaky.state.onPage = (n) => {
        if (n === 2) flaky.state.down = true;
      };
      const error = await importFromApi(deps, served.url, opts).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SourceError);
      expect((error as Error).message).toContain("did not answer after 4 attempts (last: HTTP 502: upstream down)");
      expect(retries.length).toBe(2 + 3);
      expect(retries[0]).toStartWith("HTTP 503");
      const taken = (await store.recordSpan()) === null ? 0 : await attemptsOf(store);
      const first = Object.keys(taken).length;
      expect(first).toBeGreaterThanOrEqual(150); // two pages, committed with their position
      const mark = await store.importMark(served.url);
      expect(mark).toBeGreaterThan(0);

      // Up again, 30 of the oldest records gone (a day left the window); 10 more go after the next page.
      flaky.state.down = false;
      flaky.state.records.splice(0, 30);
      flaky.state.pages = 0;
      flaky.state.onPage = (n) => {
        if (n === 1) flaky.state.records.splice(0, 10);
      };
      const s = (await importFromApi(deps, served.url, opts)) as ApiSummary;
      expect(s.resumedAfter).toBe(new Date(mark).toISOString());
      expect(s.relocations).toBeGreaterThanOrEqual(1);
      expect(s.records).toBeLessThan(all.length - 40); // not read again from the start
      const everything = await attemptsOf(store);
      expect(Object.keys(everything).sort()).toEqual(all.map((r) => String(r.execution_id)).sort());
      expect(await verifyRollups(store)).toMatchObject({ ok: true, records: all.length });
    } finally {
      served.stop();
      await engine.close();
      await source.stop();
    }
  });

  test("a server that is not the read API, or refuses the read, stops the import with one line", async () => {
    const engine = await openEngine(":memory:", { durability: "normal", migrate: true, create: true });
    const deps = { reads: engine.store, commit: (ops: Parameters<Store["write"]>[0]) => engine.store.write(ops) };
    const cases: [Handle, string][] = [
      [() => new Response("<html>hello</html>"), "with something that is not JSON"],
      [() => Response.json({ hello: "world" }), "without {records: [...], total}"],
      [
        () => new Response("no", { status: 401 }),
        "refused the read (HTTP 401: no); give its read token with --token-file",
      ],
      [() => new Response("gone", { status: 404 }), "answered GET /api/records with HTTP 404: gone"],
    ];
    try {
      for (const [handle, message] of cases) {
        const served = listen(handle);
        const e = await importFromApi(deps, served.url, {
          normalize: NORMALIZE,
          zone: "UTC",
          at: Date.now(),
          attempts: 1,
        }).catch((x: unknown) => x);
        served.stop();
        expect(e).toBeInstanceOf(SourceError);
        expect((e as Error).message).toContain(message);
      }
    } finally {
      await engine.close();
    }
  });
});
