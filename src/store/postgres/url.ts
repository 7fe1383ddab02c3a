// A PostgreSQL location as text, without the driver: what the commands show of it and how they
// name it, for every engine's server (store/open.ts loads the PostgreSQL engine only when opened).
/**
 * The parts of a postgres:// URL, with any number of hosts ("h1:5432,h2:5432", which URL parsers
 * refuse): the user information is what precedes the last @ of the authority.
 */
export function urlParts(
  url: string,
): { scheme: string; user: string; password: string | null; hosts: string; rest: string } | null {
  const m = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/is.exec(url);
  if (!m) return null;
  const authority = m[2]!;
  const at = authority.lastIndexOf("@");
  const userinfo = at < 0 ? null : authority.slice(0, at);
  const colon = userinfo?.indexOf(":") ?? -1;
  return {
    scheme: m[1]!,
    user: userinfo === null ? "" : colon < 0 ? userinfo : userinfo.slice(0, colon),
    password: userinfo === null || colon < 0 ? null : userinfo.slice(colon + 1),
    hosts: authority.slice(at + 1),
    rest: m[3]!,
  };
}

/** The location as it may be shown: the password never is. */
export function redacted(url: string): string {
  const p = urlParts(url);
  if (!p) return "postgres://(unreadable URL)";
  const userinfo = p.password ? `${p.user}:***@` : p.user ? `${p.user}@` : "";
  return `${p.scheme}${userinfo}${p.hosts}${p.rest}`;
}
