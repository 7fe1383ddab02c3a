// Maintenance actions shared by the scheduled jobs and the admin API: prune, replay, backup.
// They write through the group-commit writer, so they share the one write path with ingestion.
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Config } from "../config.ts";
import type { StoreReads } from "../store/contract/executions.ts";
import type { MaintenanceReads } from "../store/contract/maintenance.ts";
import type { RejectedReads } from "../store/contract/rejected.ts";
import type { Store, WriteOp } from "../store/contract/store.ts";
import type { GroupCommitWriter } from "../store/writer.ts";
import { pruneOlderThan, type PruneResult } from "./prune.ts";
import { REPLAYABLE, replayRejected, type ReplayableReason, type ReplaySummary } from "./replay.ts";
import { selfCommand } from "./self-command.ts";

export interface Maintenance {
  /** `wholePeriods`: the retention job's way (prune.ts PruneOptions). */
  prune(olderThanMs: number, dryRun: boolean, opts?: { wholePeriods?: boolean }): Promise<PruneResult>;
  replay(opts: { reason?: ReplayableReason; limit?: number; dryRun?: boolean }): Promise<ReplaySummary>;
  /** A new backup file in the backup directory; older ones beyond backupKeep are removed. */
  backup(): Promise<{ path: string; bytes: number; removed: string[] }>;
}

const backupDirOf = (config: Config): string => config.backupDir ?? join(dirname(config.db), "backups");

/**
 * Also applies the config's budgets to the store: how much of what is not an execution it keeps
 * (the rejected-reports log, held reports) is maintenance policy, as retention is.
 */
export function createMaintenance(deps: {
  config: Config;
  store: StoreReads & MaintenanceReads & RejectedReads & Pick<Store, "setLimits">;
  writer: GroupCommitWriter;
  clock: () => number;
}): Maintenance {
  const { config, store, writer, clock } = deps;
  store.setLimits({ logBytes: config.logBudget, heldBytes: config.heldBudget });
  const commit = (ops: readonly WriteOp[]) => Promise.all(ops.map((op) => writer.submit(op)));

  return {
    prune: (olderThanMs, dryRun, opts) =>
      pruneOlderThan(
        { store, commit },
        { cutoff: clock() - olderThanMs, dryRun, now: clock(), wholePeriods: opts?.wholePeriods },
      ),

    replay: ({ reason, limit, dryRun }) =>
      replayRejected(
        { store, commit },
        { normalize: config, reasons: reason ? [reason] : REPLAYABLE, limit, dryRun, now: clock() },
      ),

    async backup() {
      const dir = backupDirOf(config);
      mkdirSync(dir, { recursive: true });
      const path = join(dir, `installstats-${new Date(clock()).toISOString().replace(/[:.]/g, "-")}.db`);
      // A separate process: copying a large database must not hold up request handling.
      const child = Bun.spawn([...selfCommand(), "backup", path, "--db", config.db], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err, code] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
        child.exited,
      ]);
      if (code !== 0) throw new Error(`backup failed (exit ${code}): ${err.trim() || out.trim()}`);
      const { bytes } = JSON.parse(out) as { bytes: number };
      const backups = readdirSync(dir)
        .filter((f) => /^installstats-.*\.db$/.test(f))
        .sort();
      const removed = backups.slice(0, Math.max(0, backups.length - config.backupKeep));
      for (const f of removed) rmSync(join(dir, f), { force: true });
      return { path, bytes, removed };
    },
  };
}
