// Scheduled jobs inside `serve`: each runs on its own interval, never twice at once (nor on two
// nodes sharing a database: the store's lease), and reports to the log and to /metrics.
import type { Logger } from "../log.ts";
import type { Metrics } from "../http/metrics.ts";

export interface Job {
  name: string;
  everyMs: number;
  /** Does one round of work; the returned fields are logged. */
  run(): Promise<Record<string, unknown>>;
  /** A round that did nothing worth a line at info (a frequent job finding nothing to do) is logged at debug. */
  quiet?(result: Record<string, unknown>): boolean;
}

export interface JobRunner {
  /** Runs a job now (also what the timer does); resolves when it is done. */
  runNow(name: string): Promise<void>;
  stop(): void;
}

/** The store's lease of a job (Store.leaseJob): null when another node runs it, or ran it lately. */
export type JobLease = <T>(name: string, everyMs: number, at: number, fn: () => Promise<T>) => Promise<T | null>;

/** A round due a little early still runs: timers drift, and a node's own last round must not make it skip. */
const DUE_EARLY = 0.9;

export function startJobs(
  jobs: readonly Job[],
  deps: { log: Logger; metrics: Metrics; lease: JobLease; clock: () => number },
): JobRunner {
  const running = new Set<string>();
  const timers: ReturnType<typeof setInterval>[] = [];

  /** `now`: run even when the job ran lately (runNow), unless it runs elsewhere at this moment. */
  async function runJob(job: Job, now = false): Promise<void> {
    if (running.has(job.name)) return; // the previous round is still going
    running.add(job.name);
    const started = performance.now();
    try {
      const result = await deps.lease(job.name, now ? 0 : job.everyMs * DUE_EARLY, deps.clock(), () => job.run());
      if (result === null) {
        deps.metrics.jobRuns.inc({ job: job.name, result: "skipped" });
        deps.log.debug("job skipped: another node runs it", { job: job.name });
        return;
      }
      deps.metrics.jobRuns.inc({ job: job.name, result: "ok" });
      (job.quiet?.(result) ? deps.log.debug : deps.log.info)("job done", {
        job: job.name,
        ms: Math.round(performance.now() - started),
        ...result,
      });
    } catch (e) {
      deps.metrics.jobRuns.inc({ job: job.name, result: "error" });
      deps.log.error("job failed", { job: job.name, error: e instanceof Error ? e.message : String(e) });
    } finally {
      running.delete(job.name);
    }
  }

  for (const job of jobs) {
    const timer = setInterval(() => void runJob(job), job.everyMs);
    timer.unref?.();
    timers.push(timer);
  }
  deps.log.info("jobs scheduled", { jobs: jobs.map((j) => ({ name: j.name, every_s: j.everyMs / 1000 })) });

  return {
    async runNow(name) {
      const job = jobs.find((j) => j.name === name);
      if (!job) throw new Error(`no job named ${name}`);
      await runJob(job, true);
    },
    stop() {
      timers.forEach((t) => clearInterval(t));
    },
  };
}
