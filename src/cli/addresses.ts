// What `serve` prints once it listens: the address line scripts read, then addresses a person can
// open and the URLs to give installer scripts (both protocols), with this machine's own addresses
// when bound to every address (0.0.0.0 or ::).
import { networkInterfaces, type NetworkInterfaceInfo } from "node:os";

type Interfaces = NodeJS.Dict<NetworkInterfaceInfo[]>;

const WILDCARD_V4 = "0.0.0.0";
const WILDCARD_V6 = new Set(["::", "[::]"]);

const urlHost = (address: string): string =>
  address.includes(":") && !address.startsWith("[") ? `[${address}]` : address;
const isLoopback = (host: string): boolean =>
  host === "localhost" || host.startsWith("127.") || host === "::1" || host === "[::1]";

/** The addresses other machines may reach: non-internal IPv4 (and global IPv6 when bound to ::), with their interface. */
function lanAddresses(
  ipv6: boolean,
  interfaces: Interfaces = networkInterfaces(),
): { address: string; name: string }[] {
  const found: { address: string; name: string }[] = [];
  for (const [name, infos] of Object.entries(interfaces)) {
    for (const info of infos ?? []) {
      if (info.internal) continue;
      if (info.family === "IPv4") found.push({ address: info.address, name });
      // Link-local IPv6 (fe80::) needs a zone id in a URL: no use to give to a script.
      else if (ipv6 && !info.address.toLowerCase().startsWith("fe80:")) found.push({ address: info.address, name });
    }
  }
  return found;
}

/**
 * The lines printed at start-up. The first is `installstats <version> listening on http://host:port`
 * (scripts parse it); then where to open the dashboard and what to give installer scripts.
 */
export function startupLines(version: string, host: string, port: number, interfaces?: Interfaces): string[] {
  const base = (h: string) => `http://${urlHost(h)}:${port}`;
  const lines = [`installstats ${version} listening on ${base(host)}`];
  const wildcard = host === WILDCARD_V4 || WILDCARD_V6.has(host);
  const lan = wildcard ? lanAddresses(WILDCARD_V6.has(host), interfaces) : [];

  const open: { url: string; note: string }[] = [];
  let scriptHost: string | null;
  if (wildcard) {
    open.push({ url: `${base("localhost")}/`, note: "this machine" });
    for (const { address, name } of lan) open.push({ url: `${base(address)}/`, note: name });
    scriptHost = lan[0]?.address ?? null;
  } else {
    open.push({
      url: `${base(isLoopback(host) ? "localhost" : host)}/`,
      note: isLoopback(host) ? "this machine only: --host 0.0.0.0 accepts other machines" : "",
    });
    scriptHost = host;
  }
  const width = Math.max(...open.map((o) => o.url.length));
  open.forEach((o, i) =>
    lines.push(
      `${i === 0 ? "  dashboard:  " : "              "}${o.url.padEnd(width)}${o.note ? `  (${o.note})` : ""}`.trimEnd(),
    ),
  );

  if (scriptHost === null) {
    lines.push(
      `  installer scripts: no network address found; give them TELEMETRY_URL=http://<this machine's address>:${port}/telemetry (old scripts: base URL http://<this machine's address>:${port})`,
    );
    return lines;
  }
  const script = base(scriptHost);
  const local = isLoopback(scriptHost) ? "  (reachable from this machine only)" : "";
  lines.push(`  installer scripts, current clients:  TELEMETRY_URL=${script}/telemetry${local}`);
  // The old clients' base URL: they append /upload and /upload/updatestatus themselves.
  lines.push(`  installer scripts, original clients: base URL ${script}${local}`);
  if (lan.length > 1)
    lines.push(
      `  (other addresses of this machine work too: ${lan
        .slice(1)
        .map((a) => urlHost(a.address))
        .join(", ")})`,
    );
  return lines;
}

/** The dashboard's address for links (alert messages) when no --public-url is set: the first LAN address when bound to every address. */
export function linkBase(host: string, port: number, interfaces?: Interfaces): string {
  const wildcard = host === WILDCARD_V4 || WILDCARD_V6.has(host);
  const reachable = wildcard
    ? (lanAddresses(WILDCARD_V6.has(host), interfaces)[0]?.address ?? "localhost")
    : isLoopback(host)
      ? "localhost"
      : host;
  return `http://${urlHost(reachable)}:${port}`;
}
