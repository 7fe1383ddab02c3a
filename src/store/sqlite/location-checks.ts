// Before SQLite opens a database file: is its place usable? SQLite answers a missing directory and
// a permission problem alike ("unable to open database file") or later, at the first write
// ("attempt to write a readonly database"); this names the cause and the fix in one line.
import { accessSync, constants, existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { DatabaseOpenError } from "../engine.ts";
import { IN_MEMORY } from "../location.ts";

/** The name of a user id from /etc/passwd, else "uid N". */
function userName(uid: number): string {
  try {
    for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
      const [name, , id] = line.split(":");
      if (name && Number(id) === uid) return name;
    }
  } catch {
    // no passwd file (a scratch container): the number will do
  }
  return `uid ${uid}`;
}

/** Who this process runs as, for messages: "nobody" or "uid 1234". */
const whoami = (): string => (process.getuid ? userName(process.getuid()) : "this user");

/** The fix for a path owned by someone else: become the owner, or (root's files, left by a command run as root) give it away. */
function ownerFix(uid: number, path: string): string {
  const me = whoami();
  const owner = userName(uid);
  return uid === 0
    ? `it belongs to root (made by a command run as root?): give it to ${me} (chown ${me} ${path})`
    : `run installstats as ${owner} (e.g. sudo -u ${owner} installstats ...) or give ${me} write access (chown ${me} ${path})`;
}

/** The errno code of a failed access(2) check, or null when it passed. */
function denied(path: string, mode: number): string | null {
  try {
    accessSync(path, mode);
    return null;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? "EACCES";
  }
}

const fail = (message: string): never => {
  throw new DatabaseOpenError(message);
};

const ELSEWHERE = "choose another place with --db (or INSTALLSTATS_DB)";

/**
 * Throws a DatabaseOpenError (exit 3) naming what stands in the way of using the file `location` as the database:
 * a missing directory, a directory or other non-file at the path, a directory or file (or its
 * -wal/-shm) this user may not write, a read-only file system. A missing file is fine when the
 * command creates one; otherwise the caller reports it (`missingDatabase`).
 */
export function checkSqliteLocation(location: string, opts: { create: boolean }): void {
  if (location === IN_MEMORY) return;
  const path = resolve(location);
  const dir = dirname(path);

  if (existsSync(path)) {
    const st = statSync(path);
    if (st.isDirectory())
      fail(
        `--db ${location} is a directory; name a database file in it, e.g. --db ${location.replace(/\/+$/, "")}/installstats.db`,
      );
    if (!st.isFile()) fail(`--db ${location} is not a regular file; name a database file`);
  } else {
    if (!opts.create) return;
    if (!existsSync(dir))
      fail(
        `cannot create the database ${location}: directory ${dir} does not exist; create it (mkdir -p ${dir}) or ${ELSEWHERE}`,
      );
    if (!statSync(dir).isDirectory())
      fail(`cannot create the database ${location}: ${dir} is not a directory; ${ELSEWHERE}`);
  }

  // SQLite keeps its -wal and -shm files beside the database: the directory must be writable too.
  const dirProblem = denied(dir, constants.W_OK | constants.X_OK);
  if (dirProblem === "EROFS")
    fail(`cannot write the database ${location}: ${dir} is on a read-only file system; ${ELSEWHERE}`);
  if (dirProblem !== null) {
    fail(
      `permission denied: user ${whoami()} may not write in ${dir}, where the database and its -wal and -shm files live; ${ownerFix(statSync(dir).uid, dir)}, or ${ELSEWHERE}`,
    );
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (!existsSync(file)) continue;
    const problem = denied(file, constants.R_OK | constants.W_OK);
    if (problem === null) continue;
    if (problem === "EROFS")
      fail(`cannot write the database ${location}: it is on a read-only file system; ${ELSEWHERE}`);
    const st = statSync(file);
    const mode = (st.mode & 0o777).toString(8).padStart(4, "0");
    fail(
      `permission denied: user ${whoami()} may not write ${file} (owned by ${userName(st.uid)}, mode ${mode}); ${ownerFix(st.uid, file)}`,
    );
  }
}

/**
 * Call before opening `location`: `undo()` then removes the database files (and the serve lock's
 * file) if they did not exist before, for a command that failed before it stored anything.
 */
export function createdBy(location: string): { undo(): void } {
  const fresh = location !== IN_MEMORY && !existsSync(location);
  return {
    undo() {
      if (!fresh) return;
      for (const suffix of ["", "-wal", "-shm", "-journal", ".lock"]) rmSync(`${location}${suffix}`, { force: true });
    },
  };
}
