// How to run this program again (a backup in a child process, serve under another environment).

/** The binary itself, or bun with the entry script in development; the arguments follow. */
export function selfCommand(): string[] {
  return Bun.main.startsWith("/$bunfs/") ? [process.execPath] : [process.execPath, Bun.main];
}
