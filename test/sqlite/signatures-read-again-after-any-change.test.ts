// Signatures read are kept while nothing changes (reads.ts KnownSignatures): a page asks for the
// same few dozen on every request. A sighting changes a signature's last sighting and apps without
// touching a stored rollup cell, so what is kept goes with any change of the database: a batch of
// this connection, a commit of another, and nothing read inside a transaction outlives it.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { failureSignatureId } from "../../src/domain/error-signature.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { createStoreState } from "../../src/store/sqlite/store-state.ts";
import { writeNow } from "../../src/store/sqlite/store.ts";
import { finishedLoad } from "../helpers/reports.ts";
import { tempDir } from "../helpers/tmp.ts";

const TEXT = "disk full on /var/lib/vz";

test("a signature read again reflects every sighting, whoever wrote it", () => {
  const file = join(tempDir(), "signatures.db");
  const a = openDatabase(file, { durability: "normal", migrate: true });
  const b = openDatabase(file, { durability: "normal", migrate: false });
  const state = createStoreState(a.sqlite, a.db);
  const id = failureSignatureId("failed", TEXT)!;
  const T = Date.UTC(2026, 10, 2, 10);
  const failed = (rid: string, nsapp: string, at: number) =>
    finishedLoad(rid, at, { nsapp, status: "failed", outcome: "failed", error: TEXT, exitCode: 1 });
  const seen = () => {
    const [s] = state.reads.signatures([id]);
    return s === undefined ? null : { apps: s.apps, lastSeen: s.lastSeen };
  };

  expect(seen()).toBeNull();
  writeNow(state, [failed("f1", "nginx", T)]);
  // A load is seen when it ended (finishedLoad: 500 ms after it began).
  expect(seen()).toEqual({ apps: ["nginx"], lastSeen: T + 500 });
  expect(seen()).toEqual({ apps: ["nginx"], lastSeen: T + 500 }); // read twice

  // A batch of this connection.
  writeNow(state, [failed("f2", "docker", T + 60_000)]);
  expect(seen()).toEqual({ apps: ["docker", "nginx"], lastSeen: T + 60_500 });

  // Another connection's commit.
  b.sqlite.run("UPDATE error_signatures SET apps = ?, last_seen = ? WHERE id = ?", ['["yarr"]', T + 120_000, id]);
  expect(seen()).toEqual({ apps: ["yarr"], lastSeen: T + 120_000 });

  // Read inside a transaction: the change is seen there, and gone with the rollback.
  expect(() =>
    a.sqlite.transaction(() => {
      a.sqlite.run("UPDATE error_signatures SET apps = ? WHERE id = ?", ['["zabbix"]', id]);
      expect(seen()).toEqual({ apps: ["zabbix"], lastSeen: T + 120_000 });
      throw new Error("rolled back");
    })(),
  ).toThrow("rolled back");
  expect(seen()).toEqual({ apps: ["yarr"], lastSeen: T + 120_000 });
  a.sqlite.close();
  b.sqlite.close();
});

test("more signatures than are kept are all answered, each once", () => {
  const file = join(tempDir(), "many-signatures.db");
  const a = openDatabase(file, { durability: "normal", migrate: true });
  const state = createStoreState(a.sqlite, a.db);
  const T = Date.UTC(2026, 10, 2, 10);
  // Letters only: digits would be normalized into one signature.
  const word = (n: number) =>
    Array.from({ length: 3 }, (_, k) => "abcdefghijklmnopqrstuvwxyz"[Math.floor(n / 26 ** k) % 26]).join("");
  const texts = Array.from({ length: 1100 }, (_, i) => `install failed: missing package ${word(i)}`);
  writeNow(
    state,
    texts.map((error, i) =>
      finishedLoad(`m${i}`, T + i, { nsapp: "nginx", status: "failed", outcome: "failed", error, exitCode: 1 }),
    ),
  );
  const ids = texts.map((t) => failureSignatureId("failed", t)!);
  expect(new Set(ids).size).toBe(1100);
  for (const asked of [ids, [...ids, ...ids.slice(0, 10)], ids.slice(0, 5)]) {
    const got = state.reads.signatures(asked).map((s) => s.id);
    expect(got.sort()).toEqual([...new Set(asked)].sort());
  }
  a.sqlite.close();
});
