// The checkpoint thread, for real: a Worker checkpointing a database file while a writer commits.
import { afterAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createWriter, type GroupCommitWriter } from "../../src/store/writer.ts";
import { createLogger } from "../../src/log.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { createSqliteStore } from "../../src/store/sqlite/store.ts";
import { startCheckpointThread, type CheckpointOptions } from "../../src/store/sqlite/checkpoint-thread.ts";
import type { WriteOp } from "../../src/store/contract/store.ts";
import { reportOp, uploadStart } from "../helpers/reports.ts";

const DIR = mkdtempSync(join(tmpdir(), "installstats-checkpoint-"));
afterAll(() => rmSync(DIR, { recursive: true, force: true }));

const CHECKPOINTER = new URL("../../src/store/sqlite/checkpointer.ts", import.meta.url);

const start = (id: string): WriteOp => reportOp(uploadStart(id, { nsapp: `app-${id.length % 7}` }), Date.now());

/** A database as `serve` sets it up: the writer lets the checkpoint thread in before each batch. */
function serving(name: string, thread?: { url: URL; options: CheckpointOptions }) {
  const path = join(DIR, name);
  const { sqlite, db } = openDatabase(path, { durability: "normal", migrate: true });
  const lines: string[] = [];
  const log = createLogger("info", (line) => lines.push(line), Date.now);
  const checkpoints = thread ? startCheckpointThread(thread.url, sqlite, path, log, thread.options) : null;
  const store = createSqliteStore(sqlite, db);
  const writer = createWriter((ops) => (checkpoints?.beforeWrite(), store.write(ops)), 1000);
  const close = () => {
    checkpoints?.stop();
    store.close();
  };
  return { path, sqlite, writer, lines, close };
}

/** `rounds` batches of 20 start reports, one after the other, as a steady stream of commits. */
async function stream(writer: GroupCommitWriter, prefix: string, rounds: number): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    await Promise.all(Array.from({ length: 20 }, (_, i) => writer.submit(start(`${prefix}-${round}-${i}`))));
  }
}

const walBytes = (path: string) => statSync(`${path}-wal`).size;

/**
 * A serving database with a fast checkpoint thread (every 5 ms, past 200 frames), streamed into
 * until the thread's first hold: it takes a moment to start, and from then on it keeps up.
 */
async function servingWithHolds(name: string) {
  const holds: number[] = [];
  const t = serving(name, {
    url: CHECKPOINTER,
    options: { onHold: (seconds) => holds.push(seconds), maxFrames: 200, everyMs: 5 },
  });
  const deadline = Date.now() + 10_000;
  for (let i = 0; holds.length === 0 && Date.now() < deadline; i++) await stream(t.writer, `w${i}`, 10);
  expect(holds.length).toBeGreaterThan(0);
  return { t, holds };
}

describe("checkpoint thread", () => {
  test("under a steady stream of commits the WAL starts over, after short holds of the writer", async () => {
    // Without a checkpointer every frame stays in the WAL: the size the same stream reaches unchecked.
    const control = serving("control.db");
    control.sqlite.run("PRAGMA wal_autocheckpoint = 0");
    await stream(control.writer, "c", 400);
    const unchecked = walBytes(control.path);
    control.close();

    const { t, holds } = await servingWithHolds("checked.db");
    try {
      const before = walBytes(t.path);
      await stream(t.writer, "s", 400);
      expect(holds.length).toBeGreaterThan(1);
      expect(Math.max(...holds)).toBeLessThan(0.5);
      // Started over again and again: the WAL file grew far less than the same stream wrote into it
      // (a fifth to a quarter of it on an idle machine, 0.26 with the CPUs busy with other work;
      // without a restart it would reach the whole).
      expect(walBytes(t.path) - before).toBeLessThan(unchecked / 2);
      expect(t.sqlite.query("SELECT count(*) AS n FROM executions WHERE random_id LIKE 's-%'").get()).toEqual({
        n: 8000,
      });
      expect(t.lines.join("")).not.toMatch(/checkpoint failed|died|kept the writer waiting/);
    } finally {
      t.close();
    }
    expect(walBytes(t.path)).toBe(0); // stop copies the rest in and empties the WAL
  }, 30_000);

  test("while another connection reads old frames, the writer is held about once a second, not at every pass", async () => {
    const { t, holds } = await servingWithHolds("reader.db");
    try {
      // A reader (another process's export, say) keeps its snapshot: frames after it cannot be copied.
      const reader = new Database(t.path, { readonly: true });
      reader.run("BEGIN");
      reader.query("SELECT count(*) FROM executions").get();
      const before = holds.length;
      const began = performance.now();
      for (let i = 0; performance.now() - began < 1_500; i++) await stream(t.writer, `r${i}`, 10);
      const whileReading = holds.length - before;
      expect(whileReading).toBeLessThanOrEqual(3);
      reader.run("COMMIT");
      reader.close();
      // Once the reader is gone the WAL starts over again.
      const after = holds.length;
      for (let i = 0; holds.length === after && performance.now() - began < 8_000; i++)
        await stream(t.writer, `a${i}`, 10);
      expect(holds.length).toBeGreaterThan(after);
    } finally {
      t.close();
    }
  }, 30_000);

  test("a thread that asks for a hold and never lets go cannot stop the writer for long", async () => {
    const silent = join(DIR, "silent-checkpointer.ts");
    writeFileSync(silent, `self.onmessage = (e) => { Atomics.store(new Int32Array(e.data.hold), 0, 1); };\n`);
    const holds: number[] = [];
    const t = serving("silent.db", { url: new URL(`file://${silent}`), options: { onHold: (s) => holds.push(s) } });
    try {
      await Bun.sleep(200); // the thread has asked
      const began = performance.now();
      expect(await t.writer.submit(start("waits"))).toEqual({ kind: "created", outcome: "in_progress" });
      const waited = performance.now() - began;
      expect(waited).toBeGreaterThan(900);
      expect(waited).toBeLessThan(3_000);
      expect(holds).toHaveLength(1);
      expect(t.lines.join("")).toContain("checkpoint thread kept the writer waiting");
      expect(await t.writer.submit(start("goes on"))).toEqual({ kind: "created", outcome: "in_progress" });
      expect(holds).toHaveLength(1);
    } finally {
      t.close();
    }
  });
});
