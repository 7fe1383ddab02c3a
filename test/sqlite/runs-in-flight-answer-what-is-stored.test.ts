// Runs in progress are kept in memory as the connection wrote them (write-context.ts inFlight), so a
// run's next report does not look it up again. Whatever else writes executions must leave nothing
// stale there: expiry, deletion, folding, another connection's commit, a batch that rolls back.
// The same generated writes go to a store that keeps runs in flight and to one that keeps none
// (every lookup from the rows): every batch's results, every stored execution and every rollup cell
// must be the same.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { defaults } from "../../src/config.ts";
import { GRAINS } from "../../src/domain/rollup.ts";
import { HOUR } from "../../src/domain/time.ts";
import { intake } from "../../src/ingest/pipeline.ts";
import type { WriteOp } from "../../src/store/contract/store.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { rollupCells } from "../../src/store/sqlite/rollup-reads.ts";
import { checkState, createStoreState } from "../../src/store/sqlite/store-state.ts";
import { writeNow } from "../../src/store/sqlite/store.ts";
import { DEFAULT_LIMITS } from "../../src/store/common/budgets.ts";
import { tempDir } from "../helpers/tmp.ts";
import { prng } from "../helpers/random.ts";

const encoder = new TextEncoder();
const STEPS = ["installing", "validation", "configuring"];
const LONG_ERROR = `exit_code=100 | APT: package installation failed\n---\n${"E: Unable to fetch some archives\n".repeat(40)}`;

function open(file: string, inFlightLimit?: number) {
  const { sqlite, db } = openDatabase(file, { durability: "normal", migrate: true });
  return { sqlite, state: createStoreState(sqlite, db, DEFAULT_LIMITS, null, false, inFlightLimit) };
}

describe("runs in flight kept in memory", () => {
  test("answer what the stored rows answer, through expiry, deletion, folds, another connection and a rollback", () => {
    const dir = tempDir();
    const kept = open(join(dir, "kept.db"));
    const other = open(join(dir, "kept.db")); // a second connection to the same file
    const none = open(join(dir, "none.db"), 0);
    const next = prng(29);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    let at = kept.state.open.foldedUntil + 60_000;
    let ids = 0;
    const id = () => `00000000-0000-4000-8000-${String(++ids).padStart(12, "0")}`;
    interface Run {
      rid: string;
      eid: string;
      step: number;
      app: string;
    }
    const runs: Run[] = [];
    const op = (body: Record<string, unknown>): WriteOp => {
      const taken = intake("telemetry", encoder.encode(JSON.stringify(body)), at, defaults);
      if (!taken.ok) throw new Error(taken.rejection.message);
      return taken.op;
    };
    const report = (run: Run, status: string, extra: Record<string, unknown> = {}) =>
      op({
        payload_version: 2,
        random_id: run.rid,
        execution_id: run.eid,
        type: "lxc",
        nsapp: run.app,
        os_type: "debian",
        os_version: pick(["12", "13"]),
        pve_version: "8.4.1",
        method: "default",
        status,
        exit_code: status === "failed" ? 100 : 0,
        error: status === "failed" ? LONG_ERROR : "",
        ...extra,
      });
    let rolledBack = 0;
    for (let batch = 0; batch < 400; batch++) {
      const ops: WriteOp[] = [];
      let elsewhere: WriteOp | null = null;
      for (let n = 1 + Math.floor(next() * 6); n > 0; n--) {
        const r = next();
        if (runs.length < 12 || r < 0.15) {
          const rid = id();
          runs.push({ rid, eid: rid, step: 0, app: pick(["docker", "nginx", "pihole", "immich"]) });
          if (next() < 0.1) ops.push(report(runs.at(-1)!, "success")); // a final before its start: held
        } else if (r < 0.8) {
          const run = pick(runs);
          if (run.step < STEPS.length) ops.push(report(run, STEPS[run.step++]!, { install_duration: run.step * 10 }));
          else {
            ops.push(report(run, pick(["success", "failed", "failed"])));
            runs.splice(runs.indexOf(run), 1);
            if (next() < 0.4) runs.push({ ...run, eid: id(), step: 0 }); // a retry: a new execution
          }
          if (next() < 0.1) ops.push(ops.at(-1)!); // the same report twice
        } else if (r < 0.86) ops.push({ kind: "expire", executionId: pick(runs).eid, at });
        else if (r < 0.9) {
          const run = pick(runs);
          ops.push({ kind: "delete", randomId: run.rid, at });
          runs.splice(runs.indexOf(run), 1);
        } else if (r < 0.95) {
          // Another connection writes the run's next step to the same file.
          const run = pick(runs);
          elsewhere = report(run, run.step < STEPS.length ? STEPS[run.step++]! : "configuring");
        } else ops.push({ kind: "fold", until: at - (at % HOUR), at });
      }
      if (elsewhere) {
        expect(writeNow(other.state, [elsewhere])).toEqual(writeNow(none.state, [elsewhere]));
      }
      if (ops.length === 0) continue;
      if (next() < 0.03) {
        // A batch that fails part-way, after its reports were applied, is rolled back whole, on
        // both: its last op is a report that cannot be read (a bug's exception, not SQLite's).
        const failing = [...ops, { kind: "report", report: null, at } as unknown as WriteOp];
        let thrown = 0;
        for (const s of [kept, none]) {
          try {
            writeNow(s.state, failing);
          } catch {
            thrown++;
          }
        }
        if (thrown === 2) {
          rolledBack++;
          continue;
        }
        throw new Error("a batch meant to fail was applied");
      }
      expect(writeNow(kept.state, ops)).toEqual(writeNow(none.state, ops));
      at += Math.floor(next() * 120_000);
    }
    expect(rolledBack).toBeGreaterThan(0);
    const all = (s: ReturnType<typeof open>) =>
      [...s.state.reads.iterateExecutions({})].sort((a, b) => (a.executionId < b.executionId ? -1 : 1));
    const stored = all(kept);
    expect(stored.length).toBeGreaterThan(150);
    expect(stored).toEqual(all(none));
    checkState(kept.state, true); // the other connection may have written last
    const start = kept.state.open.foldedUntil - 24 * HOUR;
    // Cells in slice and hour order (a store that counted its open hours again lists them in another).
    const cells = (s: ReturnType<typeof open>) =>
      rollupCells(s.state, GRAINS.hour, start, at + HOUR).sort((a, b) =>
        a.slice === b.slice ? a.bucket - b.bucket : a.slice < b.slice ? -1 : 1,
      );
    expect(cells(kept)).toEqual(cells(none));
    for (const s of [kept, other, none]) s.sqlite.close();
  });
});
