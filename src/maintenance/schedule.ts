// Which jobs `serve` runs, from the config.
import type { Config } from "../config.ts";
import type { GroupCommitWriter } from "../store/writer.ts";
import type { MaintenanceReads } from "../store/contract/maintenance.ts";
import { expireHeldJob } from "./expire-held.ts";
import { expireStuckJob } from "./expire-stuck.ts";
import type { Job } from "./jobs.ts";
import { HOUR } from "../domain/time.ts";
import type { Maintenance } from "./service.ts";

export function scheduledJobs(deps: {
  config: Config;
  store: MaintenanceReads;
  writer: GroupCommitWriter;
  clock: () => number;
  maintenance: Maintenance;
}): Job[] {
  const { config, maintenance, writer, clock } = deps;
  const jobs: Job[] = [
    {
      // Closed hours go into day and month cells (src/domain/rollup.ts); until then
      // reads take them from hour cells, so this only keeps reads short.
      name: "fold-rollups",
      everyMs: 5 * 60_000,
      run: async () => {
        const now = clock();
        const result = await writer.submit({ kind: "fold", until: now - (now % HOUR), at: now });
        return { hours: result.kind === "folded" ? result.hours : 0 };
      },
    },
  ];
  if (config.stuckAfterMs > 0) jobs.push(expireStuckJob({ ...deps, stuckAfterMs: config.stuckAfterMs }));
  if (config.heldExpiryMs > 0) jobs.push(expireHeldJob({ writer, clock, heldExpiryMs: config.heldExpiryMs }));
  if (config.retentionMs > 0) {
    jobs.push({
      name: "retention",
      everyMs: Math.min(HOUR, Math.max(60_000, config.retentionMs / 100)),
      run: async () => {
        // PostgreSQL drops whole months: nothing is deleted row by row (docs/postgresql.md#tables-for-100m-executions).
        const r = await maintenance.prune(config.retentionMs, false, { wholePeriods: true });
        return {
          deleted_executions: r.executions,
          deleted_held: r.held,
          deleted_rejected: r.rejected,
          cutoff: r.cutoff,
        };
      },
    });
  }
  if (config.backupEveryMs > 0) {
    jobs.push({
      name: "backup",
      everyMs: config.backupEveryMs,
      run: async () => ({ ...(await maintenance.backup()) }),
    });
  }
  return jobs;
}
