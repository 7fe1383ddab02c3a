// Field values from hostile clients (issue 15, item 7): integers are exact or refused, numeric
// fields keep the community service's ranges, and ids that differ stay different (lone surrogates
// and undecodable bytes, which the database would store as U+FFFD, are refused in ids).
import { describe, expect, test } from "bun:test";
import { startReport, testApp } from "../helpers/app.ts";

const telemetry = (id: string, fields: Record<string, unknown> = {}) => ({
  random_id: id,
  execution_id: id,
  type: "lxc",
  nsapp: "debian",
  status: "installing",
  os_type: "debian",
  os_version: "12",
  ...fields,
});

/** A start report as JSON text with `fields` spliced in as raw JSON (numbers JSON.stringify cannot write, escapes). */
const rawStart = (rawFields: string) => `{"type":"lxc","nsapp":"debian","status":"installing",${rawFields}}`;

describe("integers: exact, or 422", () => {
  test("ids sent as numbers past 2^53 are refused, not rounded into each other", async () => {
    const t = await testApp();
    for (const n of ["12345678901234567890", "12345678901234567891", "9007199254740993", "1e300"]) {
      const res = await t.post("/upload", rawStart(`"random_id":${n}`));
      expect({ n, status: res.status, field: res.body.field }).toEqual({ n, status: 422, field: "random_id" });
      const tel = await t.post(
        "/telemetry",
        `{"random_id":"ok-${n}","execution_id":${n},"type":"lxc","nsapp":"x","status":"installing"}`,
      );
      expect({ n, status: tel.status, field: tel.body.field }).toEqual({ n, status: 422, field: "execution_id" });
    }
    // A whole number JSON holds exactly is an id like any other.
    const exact = await t.post("/upload", rawStart(`"random_id":9007199254740991`));
    expect(exact.status).toBe(201);
    expect(exact.body.random_id).toBe("9007199254740991");
    expect((await t.get("/api/installs/9007199254740991")).status).toBe(200);
  });

  test("numeric fields past 2^53 or out of range: 422 naming the field and its range", async () => {
    const t = await testApp();
    const cases: [string, string][] = [
      ['"core_count":9007199254740993', "core_count"],
      ['"core_count":257', "core_count"],
      ['"core_count":-1', "core_count"],
      ['"ram_size":1e20', "ram_size"],
      ['"ram_size":1048577', "ram_size"],
      ['"ram_size":"2T"', "ram_size"],
      ['"disk_size":1e29', "disk_size"],
      ['"disk_size":100001', "disk_size"],
      ['"disk_size":"98T"', "disk_size"],
      ['"ct_type":3', "ct_type"],
      ['"ct_type":12345678901234567890', "ct_type"],
    ];
    for (const [i, [raw, field]] of cases.entries()) {
      const res = await t.post("/upload", rawStart(`"random_id":"r-${i}",${raw}`));
      expect({ raw, status: res.status, field: res.body.field }).toEqual({ raw, status: 422, field });
      expect(res.body.message as string).toContain(field);
    }
    // The community service's ranges, limits included.
    const edge = await t.post(
      "/upload",
      JSON.stringify(startReport("edge", { core_count: 256, ram_size: "1T", disk_size: 100_000, ct_type: 2 })),
    );
    expect(edge.status).toBe(201);
    const record = (await t.get("/api/installs/edge")).body;
    expect(record).toMatchObject({ core_count: 256, ram_size: 1_048_576, disk_size: 100_000, ct_type: 2 });
    // The same rules on /telemetry.
    for (const [field, value] of [
      ["disk_size", 1e29],
      ["core_count", 300],
      ["ram_size", 2 ** 60],
      ["ct_type", 9],
    ] as const) {
      const res = await t.post("/telemetry", telemetry(`tel-${field}`, { [field]: value }));
      expect({ field, status: res.status, at: res.body.field }).toEqual({ field, status: 422, at: field });
    }
    // Nothing refused was stored; every refusal is in the rejected log.
    expect((await t.get("/api/installs?kind=all&limit=500")).body.installs).toHaveLength(1);
  });
});

describe("ids that differ stay different", () => {
  test("distinct lone surrogates in random_id: refused with 422, never collapsed to one U+FFFD id", async () => {
    const t = await testApp();
    for (const escape of ["\\ud800", "\\udbff", "\\udc00", "\\udfff", "\\ud800\\ud800"]) {
      const res = await t.post("/upload", rawStart(`"random_id":"id-${escape}-x"`));
      expect({ escape, status: res.status, field: res.body.field }).toEqual({
        escape,
        status: 422,
        field: "random_id",
      });
      const tel = await t.post(
        "/telemetry",
        `{"random_id":"id-${escape}","type":"lxc","nsapp":"x","status":"installing"}`,
      );
      expect({ escape, status: tel.status }).toEqual({ escape, status: 422 });
      const upd = await t.post("/upload/updatestatus", `{"random_id":"id-${escape}","status":"done"}`);
      expect({ escape, status: upd.status }).toEqual({ escape, status: 422 });
    }
    // Bytes that are not UTF-8 (repaired to U+FFFD elsewhere in a body) cannot make an id either.
    for (const byte of [0xff, 0xfe, 0xc3]) {
      const body = new Uint8Array([
        ...new TextEncoder().encode('{"random_id":"bytes-'),
        byte,
        ...new TextEncoder().encode('","type":"lxc","nsapp":"x"}'),
      ]);
      const res = await t.post("/upload", body);
      expect({ byte, status: res.status, field: res.body.field }).toEqual({ byte, status: 422, field: "random_id" });
    }
    expect((await t.get("/api/installs?kind=all")).body.installs).toEqual([]);
  });

  test("proper pairs (astral characters) are ids like any other, each its own", async () => {
    const t = await testApp();
    for (const id of ["id-🐧", "id-🐢", "id-\ud83d\udc27-escaped"])
      expect((await t.post("/upload", JSON.stringify(startReport(id)))).status).toBe(201);
    const escaped = await t.post("/upload", rawStart(`"random_id":"id-\\ud83d\\udc22"`)); // = id-🐢, sent escaped
    expect(escaped.body).toMatchObject({ result: "duplicate" });
    expect((await t.get(`/api/installs/${encodeURIComponent("id-🐧")}`)).body.random_id).toBe("id-🐧");
    expect((await t.get("/api/installs?kind=all")).body.installs).toHaveLength(3);
  });

  test("a lone surrogate in a label is stored as U+FFFD, the same in the record, filters and rollups", async () => {
    const t = await testApp();
    expect((await t.post("/upload", rawStart(`"random_id":"lab-1","method":"m-\\ud800"`))).status).toBe(201);
    expect((await t.post("/upload", rawStart(`"random_id":"lab-2","method":"m-\\udfff"`))).status).toBe(201);
    expect((await t.get("/api/installs/lab-1")).body.method).toBe("m-\ufffd");
    const groups = (await t.get("/api/stats/breakdown?by=method")).body.groups as { value: string; total: number }[];
    expect(groups).toEqual([expect.objectContaining({ value: "m-\ufffd", total: 2 })]);
    const filtered = await t.get(`/api/stats/timeseries?days=1&method=${encodeURIComponent("m-\ufffd")}`);
    expect((filtered.body.points as { total: number }[]).reduce((s, p) => s + p.total, 0)).toBe(2);
    expect((await t.get(`/api/installs?method=${encodeURIComponent("m-\ufffd")}`)).body.installs).toHaveLength(2);
  });
});
