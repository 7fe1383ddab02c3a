// What a database location (`--db`, `copy --from/--to`) names, decided here and nowhere else: a
// postgres:// or postgresql:// URL is a PostgreSQL database; any other `scheme://` is refused in
// one line naming what is accepted (an SQLite error about a file called "mysql://..." helps
// nobody); everything else is an SQLite file path, ":memory:" included.

/** A location this service can open. */
export type DatabaseLocation = { engine: "sqlite"; path: string } | { engine: "postgres"; url: string };

/** A location naming a scheme no engine here speaks; `error` is the one line that says so. */
interface UnsupportedLocation {
  engine: null;
  error: string;
}

/** The in-memory SQLite database: no file to check, lock or remove. */
export const IN_MEMORY = ":memory:";

const POSTGRES = /^postgres(ql)?:\/\//i;
/** A URL's scheme (RFC 3986): a letter, then letters, digits, "+", "-" or "."; then "://". */
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

/** The location as an error may show it: a URL's password replaced. */
const withoutPassword = (text: string): string =>
  text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]*):[^/?#@]*@/i, "$1:***@");

export function parseLocation(text: string): DatabaseLocation | UnsupportedLocation {
  if (POSTGRES.test(text)) return { engine: "postgres", url: text };
  const scheme = SCHEME.exec(text)?.[1];
  if (scheme === undefined) return { engine: "sqlite", path: text };
  return {
    engine: null,
    error:
      `${withoutPassword(text)} is not a database installstats can open (${scheme.toLowerCase()}:// is not supported): ` +
      `name an SQLite file (a path such as /var/lib/installstats/installstats.db, or ${IN_MEMORY}) or a PostgreSQL database (a postgres:// or postgresql:// URL)`,
  };
}

/** A location with a scheme no engine here speaks: the command line's mistake (exit 2), not the database's. */
export class UnsupportedLocationError extends Error {}

/** The parsed location, or an UnsupportedLocationError with the one line. */
export function locate(text: string): DatabaseLocation {
  const where = parseLocation(text);
  if (where.engine === null) throw new UnsupportedLocationError(where.error);
  return where;
}
