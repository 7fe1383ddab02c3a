// Every command of the binary, in the order `installstats --help` lists them (docs/configuration.md
// is generated from the same list: scripts/docs-config.ts).
import type { Command } from "./command.ts";
import { alertsCommand } from "./alerts.ts";
import { backup } from "./backup.ts";
import { copy } from "./copy.ts";
import { exportCommand } from "./export.ts";
import { healthcheck } from "./healthcheck.ts";
import { importCommand } from "./import.ts";
import { migrate } from "./migrate.ts";
import { prune } from "./prune.ts";
import { rejected } from "./rejected.ts";
import { relay } from "./relay.ts";
import { replay } from "./replay.ts";
import { restore } from "./restore.ts";
import { seed } from "./seed.ts";
import { serve } from "./serve.ts";
import { verify } from "./verify.ts";

export const COMMANDS: readonly Command[] = [
  serve,
  migrate,
  verify,
  rejected,
  seed,
  backup,
  restore,
  exportCommand,
  importCommand,
  copy,
  prune,
  replay,
  alertsCommand,
  relay,
  healthcheck,
];

/** The command run when none is named. */
export const DEFAULT_COMMAND: Command = serve;
