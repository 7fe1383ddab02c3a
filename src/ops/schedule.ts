// Which jobs `serve` runs, from the config.
import type { Config } from "../config.ts";
import type { GroupCommitWriter } from "../ingest/writer.ts";
import type { StoreReads } from "../store/store.ts";
import { expireStuckJob } from "./expire-stuck.ts";
import type { Job } from "./jobs.ts";

export function scheduledJobs(deps: { config: Config; store: StoreReads; writer: GroupCommitWriter; clock: () => number }): Job[] {
  const { config } = deps;
  const jobs: Job[] = [];
  if (config.stuckAfterMs > 0) jobs.push(expireStuckJob({ ...deps, stuckAfterMs: config.stuckAfterMs }));
  return jobs;
}
