// An error signature's apps are stored as a sorted JSON array of names (both engines). Nearly every
// batch's sightings name apps the list holds already: they are looked for in the stored text, and
// the list is parsed, merged and written again only when one is new (parsing a list of a few
// hundred apps for every batch cost ~4 % of the server's CPU under today's clients).

/** The stored list `stored` with `apps` added, or null when it holds every one of them already. */
export function withApps(stored: string, apps: Iterable<string>): string | null {
  let missing = false;
  for (const app of apps)
    if (!holds(stored, app)) {
      missing = true;
      break;
    }
  if (!missing) return null;
  const all = new Set(JSON.parse(stored) as string[]);
  for (const app of apps) all.add(app);
  return JSON.stringify([...all].sort());
}

/**
 * Whether `list`, a JSON array of strings as JSON.stringify writes it, holds `item`: its quoted text
 * right after `[` or `,`. Inside a string a quote is always escaped, so a quote there opens an
 * element (and the escaped text, read up to its closing quote, is the whole element), or it closes
 * an element that ends in `[` or `,` and is followed by `,` or `]`: only an item that begins with
 * one of those can be matched there, so such an item is looked for in the parsed list instead.
 */
export function holds(list: string, item: string): boolean {
  if (item.startsWith(",") || item.startsWith("]")) return (JSON.parse(list) as string[]).includes(item);
  const quoted = JSON.stringify(item);
  for (let at = list.indexOf(quoted); at !== -1; at = list.indexOf(quoted, at + 1)) {
    const before = list[at - 1];
    if (before === "[" || before === ",") return true;
  }
  return false;
}
