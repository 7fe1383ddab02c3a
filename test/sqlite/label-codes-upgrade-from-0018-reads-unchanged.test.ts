// Migration 0019 (store/sqlite/codes.ts): a database of the layout of migration 0018 (labels stored
// as words) is upgraded in place at open. Every execution reads back exactly as it was, words the
// code lists do not know (an odd status, an OS of its own, a word that looks like a code) included;
// known words are stored as codes, the others as their text; filters and sorts by the coded columns
// select what they selected; verify is clean; opening again changes nothing. New writes store codes.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { SignatureSightings, failureSignature } from "../../src/domain/error-signature.ts";
import type { Execution } from "../../src/domain/execution.ts";
import type { ExecutionFilter } from "../../src/store/contract/executions.ts";
import { HOUR, floorHour } from "../../src/domain/time.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";
import { generateExecutions, seedOptions } from "../../src/seed/seed.ts";
import { CODED, codeColumn, decodeSql, encodeSql, type CodedColumn } from "../../src/store/sqlite/codes.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { openSqliteEngine } from "../../src/store/sqlite/engine.ts";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { filterWhere } from "../../src/store/common/filter.ts";
import { SELECT_READ, filterColumns } from "../../src/store/sqlite/rows.ts";
import { insertOldExecutions, sqliteMigrationsUpTo } from "../helpers/cells.ts";

setDefaultTimeout(120_000);

const dir = mkdtempSync(join(tmpdir(), "installstats-codes-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NOW = floorHour(Date.UTC(2026, 10, 20, 15));

/** The seed's /upload installs, and executions of today's clients with every label, known words and others. */
function executions(): Execution[] {
  const seeded = [...generateExecutions(seedOptions({ records: 800, days: 60, end: NOW - 2 * HOUR, seed: 5 }))];
  const current = (i: number, over: Partial<Execution>): Execution => ({
    ...seeded[i]!,
    executionId: `run-${i}`,
    randomId: `run-${i}`,
    payloadVersion: 2,
    platform: "pve",
    arch: "amd64",
    cpuVendor: "intel",
    cpuModel: "Intel(R) N100",
    gpuVendor: "",
    gpuPassthrough: "no",
    repoSource: "ProxmoxVE",
    repoSlug: "community-scripts/ProxmoxVE",
    kernelVersion: "6.14.8-2-pve",
    appVersion: "1.2.3",
    ...over,
  });
  return [
    ...seeded,
    current(10, { status: "failed", outcome: "failed", exitCode: 100, errorCategory: "dependency", error: "apt" }),
    current(20, { platform: "incus", arch: "arm64", cpuVendor: "arm", gpuVendor: "nvidia", gpuPassthrough: "yes" }),
    // Words the lists do not know, one that looks like a code, one that differs only in case.
    current(30, { status: "weird", osType: "nixos", method: "0", repoSource: "fork", repoSlug: "someone/ProxmoxVE" }),
    current(40, { type: "LXC", platform: "1", gpuVendor: "Intel", errorCategory: "", hostGpu: "igpu" }),
    current(50, { disableip6: "", type: "turnkey", gpuPassthrough: "", cpuVendor: "" }),
  ];
}

const sorted = (xs: readonly Execution[]) => [...xs].sort((a, b) => a.executionId.localeCompare(b.executionId));

describe("upgrade from the layout of migration 0018 (labels as words)", () => {
  test("executions read back as they were; known words stored as codes, others as text; filters unchanged; verify clean", async () => {
    const path = join(dir, "old.db");
    const records = executions();
    // Rows as the release with migration 0018 stored them: written in the layout before 0017, then migrated.
    const before17 = openDatabase(path, { durability: "normal", migrate: false });
    migrate(before17.db, { migrationsFolder: sqliteMigrationsUpTo(dir, 15) });
    before17.sqlite.transaction(() => {
      insertOldExecutions(before17.sqlite, records);
      // Error signatures, as the engine kept them beside the cells.
      const sightings = new SignatureSightings();
      for (const e of records) {
        const sig = failureSignature(e.outcome, e.error);
        if (sig) sightings.see(sig, e.error!, e.nsapp, e.updatedAt);
      }
      const put = before17.sqlite.query(
        "INSERT INTO error_signatures (id, signature, example, first_seen, last_seen, apps) VALUES (?, ?, ?, ?, ?, ?)",
      );
      for (const [id, x] of sightings.seen)
        put.run(id, x.signature, x.example, x.firstSeen, x.lastSeen, JSON.stringify([...x.apps].sort()));
    })();
    migrate(before17.db, { migrationsFolder: sqliteMigrationsUpTo(dir, 18) });
    expect(before17.sqlite.query("SELECT typeof(status) AS t, count(*) AS n FROM executions GROUP BY 1").all()).toEqual(
      [{ t: "text", n: records.length }],
    );
    before17.sqlite.close();

    const engine = openSqliteEngine(path, { durability: "normal", migrate: true });
    try {
      const { store, sqlite } = engine;
      for (const e of records)
        expect((await store.getExecutions(e.randomId)).find((x) => x.executionId === e.executionId)).toEqual(e);
      // Known words as their codes, anything else as its text.
      for (const name of Object.keys(CODED) as CodedColumn[]) {
        const rows = sqlite
          .query(
            `SELECT "${name}" AS word, "${codeColumn(name)}" AS stored FROM executions WHERE "${name}" IS NOT NULL`,
          )
          .all() as { word: string; stored: string | number }[];
        for (const { word, stored } of rows) {
          const code = (CODED[name] as readonly string[]).indexOf(word);
          expect({ name, word, stored }).toEqual({ name, word, stored: code >= 0 ? code : word });
        }
      }
      expect(sqlite.query("SELECT method_code AS m FROM executions WHERE execution_id = 'run-30'").get()).toEqual({
        m: "0",
      });
      // Filters and sorts by coded columns select what the words select.
      const list = async (f: ExecutionFilter) => (await store.listExecutions(f, { limit: 10_000 })).rows;
      expect((await list({})).length).toBe(records.length);
      const filtered = async (f: ExecutionFilter, want: (e: Execution) => boolean) =>
        expect(sorted(await list(f))).toEqual(sorted(records.filter(want)));
      // A numbered page sorted by a coded column: text order of the words, absent values first.
      const page = await store.pageExecutions({}, { offset: 0, limit: 10_000, sort: "method", descending: false });
      const methods = page.rows.map((e) => e.method);
      expect(methods).toEqual(
        [...methods].sort((a, b) => (a === null ? (b === null ? 0 : -1) : b === null ? 1 : a < b ? -1 : a > b ? 1 : 0)),
      );
      await filtered({ status: "weird" }, (e) => e.status === "weird");
      await filtered({ status: "failed" }, (e) => e.status === "failed");
      await filtered({ platform: "incus" }, (e) => e.platform === "incus");
      await filtered({ platform: "1" }, (e) => e.platform === "1");
      await filtered({ method: "0" }, (e) => e.method === "0");
      await filtered({ method: "default" }, (e) => e.method === "default");
      await filtered({ osType: "nixos" }, (e) => e.osType === "nixos");
      await filtered({ gpuVendor: "" }, (e) => e.gpuVendor === "" || e.gpuVendor === null);
      // The virtual kind is computed from the type's code.
      for (const kind of ["install", "tool", "addon"] as const) await filtered({ kind }, (e) => e.kind === kind);
      await filtered({ platformClass: "incus" }, (e) => e.platform === "incus");
      const check = await verifyRollups(store);
      expect({ ok: check.ok, records: check.records, mismatches: check.mismatches, gaps: check.signatureGaps }).toEqual(
        { ok: true, records: records.length, mismatches: [], gaps: 0 },
      );
    } finally {
      await engine.close();
    }
    const again = openSqliteEngine(path, { durability: "normal", migrate: true });
    try {
      const rows = again.sqlite
        .query("SELECT count(*) AS n, sum(typeof(status_code) = 'integer') AS coded FROM executions")
        .get();
      expect(rows).toEqual({ n: records.length, coded: records.filter((e) => e.status !== "weird").length });
    } finally {
      await again.close();
    }
  });

  test("the lists are the ones migration 0019 wrote rows with, and the table reads them back with", () => {
    const migration = readFileSync(new URL("../../drizzle/sqlite/0019_label_codes.sql", import.meta.url), "utf8");
    for (const name of Object.keys(CODED) as CodedColumn[]) {
      expect(migration).toContain(encodeSql(name));
      expect(migration).toContain(`\`${name}\` text GENERATED ALWAYS AS (${decodeSql(name)}) VIRTUAL`);
    }
  });

  test("reads select the codes and filters compare codes: no CASE of a virtual word column per row", () => {
    for (const name of Object.keys(CODED) as CodedColumn[]) {
      expect(SELECT_READ).toContain(`"${codeColumn(name)}"`);
      expect(SELECT_READ).not.toContain(`"${name}",`);
    }
    const like = () => {
      throw new Error("no LIKE in these filters");
    };
    const where = filterWhere(filterColumns, { status: "failed", method: "0", platform: "incus", kind: "tool" }, like)!;
    const { sql, params } = new SQLiteSyncDialect().sqlToQuery(where);
    expect(sql).toContain('"status_code" = ?');
    expect(sql).toContain('"method_code" = ?');
    expect(sql).not.toMatch(/"(status|method|platform)" /);
    // Known words bound as their codes, others as their text.
    expect([...params].sort()).toEqual(
      [CODED.status.indexOf("failed"), "0", CODED.platform.indexOf("incus"), "tool"].sort(),
    );
  });
});
