// The service as the read benchmarks drive it: a runtime over an engine they opened, logging
// errors only, on a clock they set (a benchmark moves "now" to ask a new window).
import type { AlertsConfig } from "../../src/alerts/rules.ts";
import { defaults } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { createRuntime } from "../../src/runtime.ts";
import type { Engine } from "../../src/store/engine.ts";

export function benchRuntime(engine: Engine, db: string, clock: () => number, alerts?: AlertsConfig) {
  return createRuntime(
    { ...defaults, db },
    { clock, version: "bench", log: createLogger("error", () => {}, clock), ...(alerts ? { alerts } : {}) },
    engine,
  );
}
