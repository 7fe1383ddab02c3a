// How a command fails: one line on stderr and a documented exit code (docs/operations.md#exit-codes).

/** Exit codes of every command (docs/operations.md#exit-codes). */
export const EXIT = {
  ok: 0,
  /** The command ran and its answer is no: verify found damage, import imported nothing, an unexpected error. */
  failed: 1,
  /** The command line or a setting is wrong: unknown option, bad value, missing argument, --force needed. */
  usage: 2,
  /** The database cannot be used: its directory is missing, no permission, another application's file, damaged, or served by another installstats. */
  database: 3,
  /** serve cannot listen: the port is taken, needs privileges, or the address is not this machine's. */
  listen: 4,
} as const;

/** A failure the user can act on: one line on stderr, then exit with `code`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}
