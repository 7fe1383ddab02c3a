// One server per database file: `serve` holds an exclusive flock(2) on `<db>.lock` for its
// lifetime. The kernel drops the lock when the process ends, however it ends (kill -9, power
// loss), so a lock is never stale and needs no clean-up; the file itself stays, empty of meaning
// once nobody holds it. Other commands (backup, export, verify) do not take it: they may run
// beside a server. docs/decisions/2026-11-24-first-run.md explains the choice.
import { closeSync, openSync, readFileSync, ftruncateSync, writeSync } from "node:fs";
import { DatabaseOpenError } from "../engine.ts";
import { IN_MEMORY } from "../location.ts";

const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;
const EWOULDBLOCK = new Set([11, 35]); // EAGAIN on Linux, on macOS

interface Libc {
  flock(fd: number, op: number): number;
  errno(): number;
}

let libc: Libc | null | undefined;

/** flock and errno from the C library through bun:ffi; null where it cannot be loaded. */
async function loadLibc(): Promise<Libc | null> {
  if (libc !== undefined) return libc;
  try {
    const { dlopen, FFIType, read } = await import("bun:ffi");
    const mac = process.platform === "darwin";
    const lib = dlopen(mac ? "libSystem.B.dylib" : "libc.so.6", {
      flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
      [mac ? "__error" : "__errno_location"]: { args: [], returns: FFIType.ptr },
    });
    const errnoAt = (mac ? lib.symbols.__error : lib.symbols.__errno_location) as () => number | null;
    libc = {
      flock: (fd, op) => lib.symbols.flock(fd, op) as number,
      errno: () => {
        const at = errnoAt();
        return at ? read.i32(at as never, 0) : 0;
      },
    };
  } catch {
    libc = null;
  }
  return libc;
}

export interface ServeLock {
  /** Why the database is served without the lock (no flock here); null when locked. */
  warning: string | null;
  release(): void;
}

/**
 * Takes the serve lock of the file `location`, or throws a DatabaseOpenError (exit 3) saying who
 * holds it. Call after checkSqliteLocation (the lock file lives beside the database) and before opening it, so two
 * servers never migrate or write the same file at once.
 */
export async function lockForServing(location: string, lockFile = `${location}.lock`): Promise<ServeLock> {
  if (location === IN_MEMORY) return { warning: null, release: () => {} };
  const c = await loadLibc();
  if (c === null)
    return {
      warning: `flock is not available on this system; a second server on ${location} would not be refused`,
      release: () => {},
    };
  let fd: number;
  try {
    fd = openSync(lockFile, "a+");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new DatabaseOpenError(
      `cannot open the lock file ${lockFile} (${code}): ${code === "EACCES" ? "permission denied; give this user write access to it, or delete it while no server runs" : (e as Error).message}`,
    );
  }
  if (c.flock(fd, LOCK_EX | LOCK_NB) !== 0) {
    const errno = c.errno();
    if (errno !== 0 && !EWOULDBLOCK.has(errno)) {
      // ENOLCK and friends: a file system without locks (some network mounts).
      closeSync(fd);
      return {
        warning: `cannot lock ${lockFile} (errno ${errno}); a second server on ${location} would not be refused`,
        release: () => {},
      };
    }
    let holder = "";
    try {
      const [pid, since] = readFileSync(lockFile, "utf8").split("\n");
      if (pid) holder = ` (pid ${pid}${since ? `, serving since ${since}` : ""})`;
    } catch {
      // who holds it is a courtesy; the refusal stands without it
    }
    closeSync(fd);
    throw new DatabaseOpenError(
      `${location} is already served by another installstats process${holder}; two servers on one database file are refused: stop the other one, or give this one its own --db`,
    );
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid}\n${new Date().toISOString()}\n`);
  let held = true;
  return {
    warning: null,
    release() {
      if (!held) return;
      held = false;
      c.flock(fd, LOCK_UN);
      closeSync(fd);
    },
  };
}
