// Every temporary file of a test run lives under one directory, removed when the run ends, also
// when tests fail or time out and when the process is killed: TMPDIR points there, so
// `os.tmpdir()` in every test file (and in the build and the browsers they start) lands in it.
//
// Removal: the preload's afterAll (test/helpers/preload.ts, listed in bunfig.toml) when the run
// ends normally, and a reaper process that waits for this process to go away (its stdin pipe
// closes) and then deletes the directory: bun test fires no "exit" event, and a killed process
// runs no hook at all. Measured: a `bun test` of the e2e files left ~115 MB per run in /tmp
// (the compiled binary and database directories); now nothing, also after kill -9.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The repository's root directory. */
export const ROOT = new URL("../..", import.meta.url).pathname;

const MARK = "INSTALLSTATS_TEST_TMP";
const PREFIX = "installstats-test-run-";

/**
 * Waits for end of input (this process is gone), ends what the run started from its directory
 * (compiled servers orphaned by a killed run would write on), and removes the directory.
 */
const REAPER = `
cat >/dev/null
for try in 1 2 3 4 5; do
  for p in /proc/[0-9]*; do
    case "$(readlink "$p/exe" 2>/dev/null)" in "$1"/*) kill -9 "\${p#/proc/}" 2>/dev/null ;; esac
  done
  rm -rf "$1" 2>/dev/null
  [ -e "$1" ] || exit 0
  sleep 0.2
done`;

let root: string | undefined;
// Held for the life of the process: the pipe closing is the reaper's signal.
let reaper: Bun.Subprocess | undefined;

/** Removes run directories of processes that no longer exist (a reaper that could not run: a reboot, a missing sh). */
function sweep(parent: string): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^installstats-test-run-(\d+)-/.exec(name)?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ESRCH") rmSync(join(parent, name), { recursive: true, force: true });
    }
  }
}

/** The run's directory; created, TMPDIR pointed at it and the reaper started on the first call. */
export function testTmpRoot(): string {
  if (root) return root;
  // Set by this very process (a child inherits the variable but not the directory's ownership).
  const inherited = process.env[MARK];
  if (inherited?.startsWith(`${process.pid}:`)) return (root = inherited.slice(String(process.pid).length + 1));
  const parent = tmpdir();
  sweep(parent);
  root = mkdtempSync(join(parent, `${PREFIX}${process.pid}-`));
  process.env[MARK] = `${process.pid}:${root}`;
  process.env.TMPDIR = root;
  const sh = ["sh", "-c", REAPER, "reaper", root];
  // setsid: a Ctrl-C to the terminal's process group must not take the reaper with it.
  const cmd = Bun.which("setsid") ? ["setsid", ...sh] : sh;
  try {
    reaper = Bun.spawn(cmd, {
      stdin: "pipe",
      stdout: "ignore",
      stderr: "ignore",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    reaper.unref();
  } catch {
    // no sh: the preload's afterAll and the next run's sweep remove it
  }
  return root;
}

/** Deletes the run's directory now (end of the run). */
export function removeTestTmpRoot(): void {
  if (!root) return;
  rmSync(root, { recursive: true, force: true });
}

/** A fresh directory inside the run's temporary directory, removed with it when the run ends, also after failures. */
export function tempDir(prefix = "installstats-test-"): string {
  return mkdtempSync(join(testTmpRoot(), prefix));
}
