// Scheduled jobs inside `serve`: each runs on its own interval, never twice at once, and reports
// to the log and to /metrics.
import type { Logger } from "../log.ts";
import type { Metrics } from "../http/metrics.ts";

export interface Job {
  name: string;
  everyMs: number;
  /** Does one round of work; the returned fields are logged. */
  run(): Promise<Record<string, unknown>>;
}

export interface JobRunner {
  /** Runs a job now (also what the timer does); resolves when it is done. */
  runNow(name: string): Promise<void>;
  stop(): void;
}

export function startJobs(jobs: readonly Job[], deps: { log: Logger; metrics: Metrics }): JobRunner {
  const running = new Set<string>();
  const timers: ReturnType<typeof setInterval>[] = [];

  async function runJob(job: Job): Promise<void> {
    if (running.has(job.name)) return; // the previous round is still going
    running.add(job.name);
    const started = performance.now();
    try {
      const result = await job.run();
      deps.metrics.jobRuns.inc({ job: job.name, result: "ok" });
      deps.log.info("job done", { job: job.name, ms: Math.round(performance.now() - started), ...result });
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
      await runJob(job);
    },
    stop() {
      timers.forEach((t) => clearInterval(t));
    },
  };
}
