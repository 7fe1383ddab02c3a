// Where a PostgreSQL connection's password comes from, in this order: the URL; the password file
// named by --db-password-file (a file holding only the password: a systemd credential, a docker
// secret); PGPASSWORD; the password file of libpq (PGPASSFILE, else ~/.pgpass), read as libpq
// reads it. Asked only when the server wants a password, and again for each new connection (a
// rotated secret is picked up). A password is never part of a message: they name its source.
import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export interface PasswordOptions {
  /** --db-password-file (INSTALLSTATS_DB_PASSWORD_FILE): a file holding only the password. */
  file: string | null;
  env: Record<string, string | undefined>;
  /** Told once per file when a password file is ignored (too open), as libpq warns. */
  warn: (text: string) => void;
}

/** What a connection is to, as the password file's lines are matched against it. */
export interface Target {
  hosts: readonly string[];
  ports: readonly number[];
  database: string;
  user: string;
}

/** One line of a libpq password file: `*` matches anything; `\:` and `\\` are a colon and a backslash. */
interface PassLine {
  fields: [string | null, string | null, string | null, string | null];
  password: string;
  line: number;
}

/** The lines of a libpq password file (hostname:port:database:username:password); comments and short lines left out. */
export function parsePassFile(text: string): PassLine[] {
  const out: PassLine[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    if (raw === "" || raw.startsWith("#")) return;
    const parts: { value: string; star: boolean }[] = [];
    let value = "";
    let escaped = false;
    for (let k = 0; k < raw.length; k++) {
      const ch = raw[k]!;
      if (ch === "\\" && k + 1 < raw.length) {
        value += raw[++k];
        escaped = true;
      } else if (ch === ":" && parts.length < 4) {
        parts.push({ value, star: value === "*" && !escaped });
        value = "";
        escaped = false;
      } else if (ch === ":")
        break; // the password ends at an unescaped colon, as in libpq
      else value += ch;
    }
    if (parts.length < 4) return;
    const field = (p: { value: string; star: boolean }) => (p.star ? null : p.value);
    out.push({
      fields: [field(parts[0]!), field(parts[1]!), field(parts[2]!), field(parts[3]!)],
      password: value,
      line: i + 1,
    });
  });
  return out;
}

/** The first line that matches the target (any of its hosts, with its port), or null. */
export function matchPassLine(lines: readonly PassLine[], t: Target): PassLine | null {
  const is = (field: string | null, value: string) => field === null || field === value;
  for (const l of lines) {
    const [host, port, database, user] = l.fields;
    if (!is(database, t.database) || !is(user, t.user)) continue;
    // A socket directory is "localhost" to libpq's password file.
    const hostMatches = t.hosts.some(
      (h, i) => is(host, h.startsWith("/") ? "localhost" : h) && is(port, String(t.ports[i] ?? t.ports[0])),
    );
    if (hostMatches) return l;
  }
  return null;
}

const readSecret = (path: string): string => readFileSync(path, "utf8").replace(/\r?\n$/, "");

/** Why --db-password-file cannot be read, in one line, or null when it can. */
export function passwordFileProblem(path: string): string | null {
  try {
    readSecret(path);
    return null;
  } catch (e) {
    const code = (e as { code?: string }).code;
    return `cannot read the password file ${path} (--db-password-file or INSTALLSTATS_DB_PASSWORD_FILE): ${code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : (e as Error).message}`;
  }
}

const warned = new Set<string>();

/**
 * The password for `target` when its URL has none (`pass`, for postgres.js, called when the
 * server asks), and where the last one came from (`source`, for messages).
 */
export function passwordFor(target: () => Target, opts: PasswordOptions): { pass: () => string; source: () => string } {
  let source = "none";
  function libpqFile(): string | null {
    const path = opts.env.PGPASSFILE || join(opts.env.HOME || homedir(), ".pgpass");
    let mode: number;
    try {
      const st = statSync(path);
      if (!st.isFile()) return null;
      mode = st.mode & 0o777;
    } catch {
      return null;
    }
    if ((mode & 0o077) !== 0) {
      if (!warned.has(path)) {
        warned.add(path);
        opts.warn(
          `password file ${path} is ignored: others may read it (mode 0${mode.toString(8)}); chmod 600 it, as libpq requires`,
        );
      }
      source = `none (${path} ignored: mode 0${mode.toString(8)})`;
      return null;
    }
    const line = matchPassLine(parsePassFile(readFileSync(path, "utf8")), target());
    if (!line) {
      source = `none (no line of ${path} matches)`;
      return null;
    }
    source = `${path} line ${line.line}`;
    return line.password;
  }
  return {
    pass() {
      if (opts.file !== null) {
        source = `the password file ${opts.file}`;
        return readSecret(opts.file);
      }
      const env = opts.env.PGPASSWORD;
      if (env !== undefined && env !== "") {
        source = "PGPASSWORD";
        return env;
      }
      return libpqFile() ?? "";
    },
    source: () => source,
  };
}
