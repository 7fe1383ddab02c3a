// Long error texts in the SQLite engine (src/store/sqlite/error-text.ts): split into an
// uncompressed head and a compressed rest, put back together exactly, and smaller on disk.
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { join } from "node:path";
import { UNDESCRIBED, type Execution } from "../../src/domain/execution.ts";
import { openEngine } from "../../src/store/open.ts";
import { ERROR_HEAD, fromRow, splitError } from "../../src/store/sqlite/error-text.ts";
import { tempDir } from "../helpers/tmp.ts";

const BASE = {
  executionId: "e",
  randomId: "e",
  attempt: 1,
  kind: "install",
  payloadVersion: 2,
  ...UNDESCRIBED,
  type: "lxc",
  ctType: 1,
  diskSize: 8,
  coreCount: 2,
  ramSize: 2048,
  osType: "debian",
  osVersion: "12",
  nsapp: "app",
  method: "default",
  pveVersion: "8.4.1",
  status: "failed",
  outcome: "failed",
  error: null,
  exitCode: 1,
  errorCategory: null,
  failedCommand: null,
  failedLine: null,
  installDuration: null,
  createdAt: 0,
  updatedAt: 0,
  durationMs: null,
  installingAt: null,
  validationAt: null,
  configuringAt: null,
  finishedAt: 0,
  repaired: false,
} satisfies Execution;

/** A log tail like the clients send: ~10 KiB, its numbers different in every run. */
const logTail = (run: number) =>
  Array.from(
    { length: 90 },
    (_, l) =>
      `[${String(10 + (run % 12)).padStart(2, "0")}:${l % 60}:${(l * run) % 60}] step ${l} of build ${run}: compiling module_${l}.c -> module_${l}.o (warning: unused variable 'tmp${run + l}')`,
  ).join("\n");

test.each([
  ["no error", null, false],
  ["empty", "", false],
  ["short", "exit code 100: apt-get failed", false],
  ["exactly the head", "a".repeat(ERROR_HEAD), false],
  ["one past the head", "a".repeat(ERROR_HEAD + 1), true],
  ["a surrogate pair across the cut", "x" + "\u{1F600}".repeat(ERROR_HEAD), true],
  ["a log tail", logTail(7), true],
])("%s: stored as head and rest, read back exactly", (_, error, split) => {
  const row = { ...BASE, ...splitError(error) };
  expect(row.errorRest !== null).toBe(split);
  if (error !== null) expect(row.error!.length).toBeLessThanOrEqual(ERROR_HEAD);
  // Each part is valid UTF-16 on its own (SQLite stores text as UTF-8).
  expect(row.error === null || row.error.isWellFormed()).toBe(true);
  expect(fromRow(row)).toEqual({ ...BASE, error });
});

test("log tails take a fraction of their size on disk", async () => {
  const dir = tempDir("installstats-error-text-");
  const location = join(dir, "installstats.db");
  const engine = await openEngine(location, { durability: "normal", migrate: true, create: true });
  const texts = Array.from({ length: 300 }, (_, i) => logTail(i));
  await engine.store.write(
    texts.map((error, i) => ({
      kind: "load",
      execution: { ...BASE, executionId: `r${i}`, randomId: `r${i}`, error, createdAt: i, updatedAt: i },
      at: i,
    })),
  );
  const back = await engine.store.getExecutions("r123");
  expect(back[0]!.error).toBe(texts[123]!);
  await engine.store.close();
  const sqlite = new Database(location, { readonly: true });
  const { stored } = sqlite
    .query<{ stored: number }, []>(
      "SELECT sum(length(CAST(error AS BLOB)) + length(error_rest)) AS stored FROM executions",
    )
    .get()!;
  sqlite.close();
  const sent = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  console.log(`error texts: ${sent} bytes sent, ${stored} stored (${((stored / sent) * 100).toFixed(1)}%)`);
  expect(stored / sent).toBeLessThan(0.3);
});

test("a text stored whole before migration 0010 and the same text stored split count as one", async () => {
  const dir = tempDir("installstats-error-text-");
  const location = join(dir, "installstats.db");
  const text = logTail(3);
  let engine = await openEngine(location, { durability: "normal", migrate: true, create: true });
  await engine.store.write([
    { kind: "load", execution: { ...BASE, executionId: "new", randomId: "new", error: text }, at: 0 },
  ]);
  await engine.store.close();
  // A row as an older release wrote it: the whole text in `error`, nothing in `error_rest`.
  const sqlite = new Database(location);
  // (Stored columns only: random_id, outcome and the timeline are virtual since migration 0017.)
  const stored = (
    sqlite.query("SELECT name FROM pragma_table_xinfo('executions') WHERE hidden = 0").all() as { name: string }[]
  ).map((c) => c.name);
  const values = stored.map((c) =>
    c === "execution_id" ? "'old'" : c === "error" ? "?" : c === "error_rest" ? "NULL" : `"${c}"`,
  );
  sqlite.run(
    `INSERT INTO executions (${stored.map((c) => `"${c}"`).join(", ")}) SELECT ${values.join(", ")} FROM executions WHERE execution_id = 'new'`,
    [text],
  );
  sqlite.close();
  engine = await openEngine(location, { durability: "normal", migrate: true, create: true });
  expect(await engine.store.errorTextCounts()).toEqual([{ error: text, count: 2 }]);
  expect((await engine.store.getExecutions("old"))[0]!.error).toBe(text);
  await engine.store.close();
});
