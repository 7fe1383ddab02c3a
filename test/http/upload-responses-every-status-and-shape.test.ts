// Every row of the response contract (docs/protocol.md#the-response-contract), driven through the composed app.
import { describe, expect, test } from "bun:test";
import { startReport, testApp } from "../helpers/app.ts";

// The record of an execution (docs/protocol.md#the-record): /upload's fields, the current clients', and
// the execution's own (id, attempt, kind, timeline); an install's answer adds its executions.
const EXECUTION_KEYS = [
  "random_id",
  "execution_id",
  "attempt",
  "kind",
  "payload_version",
  "type",
  "ct_type",
  "disk_size",
  "core_count",
  "ram_size",
  "os_type",
  "os_version",
  "disableip6",
  "nsapp",
  "method",
  "pve_version",
  "status",
  "outcome",
  "error",
  "created_at",
  "updated_at",
  "duration_s",
  "repaired",
  "exit_code",
  "error_category",
  "failed_command",
  "failed_line",
  "install_duration",
  "cpu_vendor",
  "cpu_model",
  "gpu_vendor",
  "gpu_model",
  "ram_speed",
  "gpu_passthrough",
  "host_gpu",
  "arch",
  "platform",
  "has_arm",
  "repo_source",
  "repo_slug",
  "kernel_version",
  "app_version",
  "timeline",
  "extra",
].sort();
const RECORD_KEYS = [...EXECUTION_KEYS, "executions"].sort();

describe("POST /upload", () => {
  test("201 for a new random_id, and the record reads back in the documented shape", async () => {
    const t = await testApp();
    const res = await t.post("/upload", startReport("id-1"));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      result: "created",
      random_id: "id-1",
      execution_id: "id-1",
      outcome: "in_progress",
      repaired: false,
    });

    const rec = await t.get("/api/installs/id-1");
    expect(rec.status).toBe(200);
    expect(Object.keys(rec.body).sort()).toEqual(RECORD_KEYS);
    expect(rec.body).toMatchObject({
      random_id: "id-1",
      type: "lxc",
      ct_type: 1,
      disk_size: 8,
      core_count: 2,
      ram_size: 2048,
      os_type: "debian",
      os_version: "12",
      disableip6: "yes",
      nsapp: "adguard",
      method: "default",
      pve_version: "8.2.2",
      status: "installing",
      outcome: "in_progress",
      error: null,
      created_at: "2026-06-01T12:00:00.000Z",
      updated_at: "2026-06-01T12:00:00.000Z",
      duration_s: null,
      repaired: false,
      // An /upload report: no payload version, its execution is the install, the first attempt.
      execution_id: "id-1",
      attempt: 1,
      kind: "install",
      payload_version: null,
      timeline: { installing: "2026-06-01T12:00:00.000Z", validation: null, configuring: null, finished: null },
    });
    const executions = rec.body.executions as Record<string, unknown>[];
    expect(executions).toHaveLength(1);
    expect(Object.keys(executions[0]!).sort()).toEqual(EXECUTION_KEYS);
    const { executions: _, ...latest } = rec.body;
    expect(executions[0]).toEqual(latest);
  });

  test("200 duplicate:true for a random_id already stored; the stored record is unchanged", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("id-dup", { nsapp: "first" }));
    t.clock.advance(5_000);
    const again = await t.post("/upload", startReport("id-dup", { nsapp: "second", ram_size: 1 }));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ result: "duplicate", duplicate: true, random_id: "id-dup" });
    const rec = await t.get("/api/installs/id-dup");
    expect(rec.body).toMatchObject({ nsapp: "first", ram_size: 2048, created_at: "2026-06-01T12:00:00.000Z" });
  });

  test("older client revision without disableip6, VM report, host_version alias", async () => {
    const t = await testApp();
    const legacy: Record<string, unknown> = startReport("legacy");
    delete legacy.disableip6;
    expect((await t.post("/upload", legacy)).status).toBe(201);
    expect((await t.get("/api/installs/legacy")).body.disableip6).toBeNull();

    const vm = startReport("vm-1", {
      type: "vm",
      ct_type: 2,
      disableip6: "",
      disk_size: "32G",
      pve_version: undefined,
      host_version: "9.0.3",
    });
    expect((await t.post("/upload", vm)).status).toBe(201);
    // disableip6 "" (the VM client sends it empty) is kept apart from absent (the legacy client above).
    expect((await t.get("/api/installs/vm-1")).body).toMatchObject({
      type: "vm",
      ct_type: 2,
      disableip6: "",
      disk_size: 32,
      pve_version: "9.0.3",
    });
  });

  test("422 invalid_field naming the field: missing random_id, unknown type, bad number", async () => {
    const t = await testApp();
    const cases: [object, string][] = [
      [startReport(""), "random_id"],
      [{ ...startReport("x"), random_id: undefined }, "random_id"],
      [startReport("x", { type: "docker" }), "type"],
      [startReport("x", { core_count: "many" }), "core_count"],
      [startReport("x", { nsapp: { nested: true } }), "nsapp"],
    ];
    for (const [body, field] of cases) {
      const res = await t.post("/upload", body);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ error: "invalid_field", field });
      expect(String(res.body.message)).toContain(field);
    }
    // Nothing stored, everything kept raw in the rejected log.
    expect((await t.get("/api/installs/x")).status).toBe(404);
    const log = await t.rejected();
    expect(log.map((r) => [r.reason, r.httpStatus, r.field])).toEqual(cases.map(([, f]) => ["invalid_field", 422, f]));
    expect(new TextDecoder().decode(log[2]!.body)).toBe(JSON.stringify(cases[2]![0]));
  });

  test("400 invalid_json for a body that cannot be repaired; raw bytes kept", async () => {
    const t = await testApp();
    const raw = new Uint8Array([0x7b, 0x22, 0x61, 0xff, 0x00, 0x3a]); // {"a\xff\0:
    const res = await t.post("/upload", raw);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_json");
    expect(typeof res.body.message).toBe("string");
    const [entry] = await t.rejected();
    expect(entry).toMatchObject({ endpoint: "upload", reason: "invalid_json", httpStatus: 400 });
    expect(new Uint8Array(entry!.body)).toEqual(raw);
  });

  test("a repaired body is stored, flagged, and its raw bytes logged with the repair", async () => {
    const t = await testApp();
    const body = `{"ct_type": 1, "type": "lxc", "disk_size": , "core_count": 2, "ram_size": 2048, "os_type": "debian", "os_version": "12", "nsapp": "jellyfin", "method": "default", "pve_version": "8.2.2", "status": "installing", "random_id": "rep-1"}`;
    const res = await t.post("/upload", body);
    expect(res.status).toBe(201);
    expect(res.body.repaired).toBe(true);
    expect((await t.get("/api/installs/rep-1")).body).toMatchObject({
      disk_size: null,
      nsapp: "jellyfin",
      repaired: true,
    });
    const [entry] = await t.rejected();
    expect(entry).toMatchObject({ reason: "repaired", httpStatus: 201, randomId: "rep-1" });
    expect(new TextDecoder().decode(entry!.body)).toBe(body);
  });

  test("413 with a JSON body over the configured limit; recorded in the log", async () => {
    const t = await testApp({ maxBodyBytes: 1024 });
    const res = await t.post("/upload", JSON.stringify(startReport("big", { nsapp: "x".repeat(2000) })));
    expect(res.status).toBe(413);
    expect(res.body.error).toBe("payload_too_large");
    expect((await t.rejected())[0]).toMatchObject({ reason: "payload_too_large", httpStatus: 413 });
    // Right at the limit is fine.
    const fits = JSON.stringify(startReport("fits"));
    expect((await t.post("/upload", fits.padEnd(1024, " "))).status).toBe(201);
  });
});

describe("POST /upload/updatestatus", () => {
  test("200 applies a final status to an installing record, with duration_s", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("life"));
    t.clock.advance(95_500);
    const res = await t.post("/upload/updatestatus", { status: "DONE", error: "none", random_id: "life" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ result: "updated", outcome: "success", random_id: "life" });
    expect((await t.get("/api/installs/life")).body).toMatchObject({
      status: "done",
      outcome: "success",
      error: "none",
      duration_s: 95.5,
      updated_at: "2026-06-01T12:01:35.500Z",
    });
  });

  test("202 holds an update for an unknown random_id and applies it when the start report arrives", async () => {
    const t = await testApp();
    const held = await t.post("/upload/updatestatus", { status: "failed", error: "exit code 1", random_id: "early" });
    expect(held.status).toBe(202);
    expect(held.body).toMatchObject({ result: "held", random_id: "early" });
    expect((await t.get("/api/installs/early")).status).toBe(404);

    t.clock.advance(1_000);
    const start = await t.post("/upload", startReport("early"));
    expect(start.status).toBe(201);
    expect(start.body.outcome).toBe("failed");
    expect((await t.get("/api/installs/early")).body).toMatchObject({
      status: "failed",
      outcome: "failed",
      error: "exit code 1",
      duration_s: null,
    });
    // Applied once: a later update is a conflict, not a second final status.
    expect((await t.post("/upload/updatestatus", { status: "done", random_id: "early" })).status).toBe(409);
  });

  test("409 for a record that already has a final status; not applied, kept in the log", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("fin"));
    await t.post("/upload/updatestatus", { status: "failed", error: "boom", random_id: "fin" });
    const second = JSON.stringify({ status: "done", error: "none", random_id: "fin" });
    const res = await t.post("/upload/updatestatus", second);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: "already_final", field: "status" });
    expect((await t.get("/api/installs/fin")).body).toMatchObject({ status: "failed", error: "boom" });
    const [entry] = await t.rejected();
    expect(entry).toMatchObject({
      endpoint: "updatestatus",
      reason: "already_final",
      httpStatus: 409,
      randomId: "fin",
    });
    expect(new TextDecoder().decode(entry!.body)).toBe(second);
  });

  test("409 for a second final update held for the same unknown random_id", async () => {
    const t = await testApp();
    expect((await t.post("/upload/updatestatus", { status: "done", random_id: "ghost" })).status).toBe(202);
    expect((await t.post("/upload/updatestatus", { status: "failed", random_id: "ghost" })).status).toBe(409);
  });

  test("a progress status keeps the record open for its final status", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("prog"));
    expect((await t.post("/upload/updatestatus", { status: "configuring", random_id: "prog" })).body.outcome).toBe(
      "in_progress",
    );
    expect((await t.post("/upload/updatestatus", { status: "done", random_id: "prog" })).status).toBe(200);
  });

  test("422 for an empty random_id (the client does not check it) and a missing status", async () => {
    const t = await testApp();
    expect((await t.post("/upload/updatestatus", { status: "failed", error: "x", random_id: "" })).body).toMatchObject({
      error: "invalid_field",
      field: "random_id",
    });
    expect((await t.post("/upload/updatestatus", { random_id: "a" })).body).toMatchObject({
      error: "invalid_field",
      field: "status",
    });
  });

  test("unescaped quotes and IP addresses in the error text: repaired, masked, stored", async () => {
    const t = await testApp();
    await t.post("/upload", startReport("q"));
    const body = `{"status": "failed", "error": "curl "http://192.168.1.20:8006/api" failed", "random_id": "q"}`;
    const res = await t.post("/upload/updatestatus", body);
    expect(res.status).toBe(200);
    expect(res.body.repaired).toBe(true);
    expect((await t.get("/api/installs/q")).body).toMatchObject({
      error: `curl "http://<ipv4>:8006/api" failed`,
      repaired: true,
    });
  });
});

describe("storage failure", () => {
  test("503 with Retry-After when the database refuses writes; acknowledged reports survive; recovers by itself", async () => {
    const t = await testApp();
    expect((await t.post("/upload", startReport("before"))).status).toBe(201);
    t.sqlite.run("PRAGMA query_only = ON"); // every write now fails inside SQLite
    const res = await t.post("/upload", startReport("during"));
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(res.body.error).toBe("storage_unavailable");
    const health = await t.get("/healthz");
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: "degraded", storage: { writable: false } });

    t.sqlite.run("PRAGMA query_only = OFF");
    expect((await t.post("/upload", startReport("after"))).status).toBe(201);
    expect((await t.get("/healthz")).status).toBe(200);
    expect((await t.get("/api/installs/before")).status).toBe(200);
    expect((await t.get("/api/installs/during")).status).toBe(404);
  });
});

describe("every response is JSON", () => {
  test("unknown route, unknown install, health", async () => {
    const t = await testApp();
    expect((await t.get("/nope")).body).toMatchObject({ error: "not_found" });
    expect((await t.get("/api/installs/unknown")).body).toMatchObject({ error: "not_found", field: "random_id" });
    expect((await t.get("/healthz")).body).toMatchObject({ status: "ok", version: "0.0.0-test" });
  });
});

describe("group commit", () => {
  test("concurrent reports share transactions and each gets its own answer", async () => {
    const t = await testApp();
    const n = 300;
    const replies = await Promise.all(Array.from({ length: n }, (_, i) => t.post("/upload", startReport(`c-${i}`))));
    expect(replies.every((r) => r.status === 201)).toBe(true);
    expect(t.writer.stats.writes).toBe(n);
    expect(t.writer.stats.batches).toBeLessThan(n / 10);
    const { count } = t.sqlite.query("SELECT count(*) AS count FROM executions").get() as { count: number };
    expect(count).toBe(n);
  });
});
