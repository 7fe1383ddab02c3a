// Per-client token buckets for ingestion, which address a request comes from, and which network
// that address counts as.
//
// On by default (config.ts): 5 reports per second per client with a burst of 60, the figures of
// the community's own service (300 per minute). An installer run sends 4 to 10 reports over
// minutes, so no real run (nor dozens at once behind one address) meets the limit.
// A client is a network, not an address: every ISP customer on IPv6 holds at least a /64 (often a
// /56), and each of its 2^64 addresses would otherwise bring a fresh bucket. So IPv6 clients share
// a bucket per /64 (--rate-limit-v6-prefix), IPv4 clients one per address (/32,
// --rate-limit-v4-prefix); an IPv4-mapped IPv6 address (::ffff:a.b.c.d) is IPv4.
// Not limited: requests with no network peer (in-process, `app.handle`) and loopback peers (this
// host: local tools, benchmarks). A loopback peer is a proxy on this host: its X-Forwarded-For is
// believed as a trusted proxy's would be, so a reverse proxy on the same host works without
// --trusted-proxies; a proxy on another host must be listed there, or all its clients share one bucket.
import { BlockList, isIP } from "node:net";

type Family = "ipv4" | "ipv6" | "other";

/** The network a client address counts as: the bucket's key, and its family for the metrics. */
export interface Network {
  key: string;
  family: Family;
}

/** Prefix lengths that make a network of each family. */
export interface NetworkPrefixes {
  v4: number;
  v6: number;
}

/** The key of a request without a network peer (in-process): never limited. */
const UNKNOWN_CLIENT = "unknown";

/** A dotted quad as one 32-bit number, or null: four decimal parts 0-255, no leading zeros. */
function ipv4Bits(text: string): number | null {
  let value = 0;
  let part = 0;
  let digits = 0;
  let parts = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 46; // a final "." ends the last part
    if (c >= 48 && c <= 57) {
      if (digits === 1 && part === 0) return null; // "01"
      part = part * 10 + (c - 48);
      if (++digits > 3 || part > 255) return null;
    } else if (c === 46 && digits > 0 && parts < 4) {
      value = value * 256 + part;
      parts++;
      part = 0;
      digits = 0;
    } else return null;
  }
  return parts === 4 ? value : null;
}

const hexDigit = (c: number): number =>
  c >= 48 && c <= 57 ? c - 48 : (c | 0x20) >= 97 && (c | 0x20) <= 102 ? (c | 0x20) - 87 : -1;

/**
 * The eight 16-bit groups of an IPv6 address (compressed with "::", with a dotted IPv4 tail, any
 * case), or null when it is none. One pass over the text: this runs for every report received.
 */
function ipv6Groups(text: string): number[] | null {
  const left: number[] = [];
  const right: number[] = [];
  let groups = left;
  let gap = false;
  const n = text.length;
  let i = 0;
  if (text.charCodeAt(0) === 58) {
    if (text.charCodeAt(1) !== 58) return null;
    gap = true;
    groups = right;
    i = 2;
  }
  while (i < n) {
    let j = i;
    let value = 0;
    for (let d = hexDigit(text.charCodeAt(j)); j < n && d >= 0; d = hexDigit(text.charCodeAt(++j)))
      value = value * 16 + d;
    if (j < n && text.charCodeAt(j) === 46) {
      // A dotted IPv4 tail ends the address.
      const v4 = ipv4Bits(text.slice(i));
      if (v4 === null) return null;
      groups.push(v4 >>> 16, v4 & 0xffff);
      break;
    }
    if (j === i || j - i > 4) return null;
    groups.push(value);
    if (j === n) break;
    if (text.charCodeAt(j) !== 58 || j + 1 === n) return null;
    if (text.charCodeAt(j + 1) === 58) {
      if (gap) return null;
      gap = true;
      groups = right;
      i = j + 2;
    } else i = j + 1;
  }
  const count = left.length + right.length;
  if (gap ? count > 7 : count !== 8) return null;
  for (let k = count; k < 8; k++) left.push(0);
  for (const g of right) left.push(g);
  return left;
}

/** An address as a family and its bits: IPv4 as one 32-bit number, IPv6 as eight 16-bit groups; null when it is none. */
function parseAddress(raw: string): { v4: number } | { v6: number[] } | null {
  let text = raw.trim();
  // "[2001:db8::1]:443", "[::1]", "192.0.2.1:5678": some proxies forward the port too.
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0 || (close + 1 < text.length && !/^:\d{1,5}$/.test(text.slice(close + 1)))) return null;
    text = text.slice(1, close);
  } else if (text.indexOf(":") === text.lastIndexOf(":") && text.includes(".")) {
    const colon = text.indexOf(":");
    if (colon >= 0) text = text.slice(0, colon); // an IPv4 address with a port
  }
  const zone = text.indexOf("%"); // fe80::1%eth0: the zone names a link of this host, not part of the address
  if (zone >= 0) text = text.slice(0, zone);
  if (!text.includes(":")) {
    const v4 = ipv4Bits(text);
    return v4 === null ? null : { v4 };
  }
  const groups = ipv6Groups(text);
  if (groups === null) return null;
  // IPv4-mapped (::ffff:a.b.c.d, also written ::ffff:c000:201): an IPv4 client on a dual-stack socket.
  if (
    groups[0] === 0 &&
    groups[1] === 0 &&
    groups[2] === 0 &&
    groups[3] === 0 &&
    groups[4] === 0 &&
    groups[5] === 0xffff
  )
    return { v4: (groups[6]! * 65536 + groups[7]!) >>> 0 };
  return { v6: groups };
}

const isLoopbackBits = (p: { v4: number } | { v6: number[] }): boolean =>
  "v4" in p ? p.v4 >>> 24 === 127 : p.v6.slice(0, 7).every((g) => g === 0) && p.v6[7] === 1;

/** Prefix lengths that make a network of each family. */
function networkKey(parsed: { v4: number } | { v6: number[] }, prefixes: NetworkPrefixes): Network {
  if ("v4" in parsed) {
    const bits = prefixes.v4;
    const masked = (parsed.v4 & (~0 << (32 - bits))) >>> 0;
    return {
      key: `${masked >>> 24}.${(masked >>> 16) & 255}.${(masked >>> 8) & 255}.${masked & 255}/${bits}`,
      family: "ipv4",
    };
  }
  const bits = prefixes.v6;
  const groups = parsed.v6;
  const masked = [0, 0, 0, 0, 0, 0, 0, 0];
  for (let i = 0; i < 8 && bits > i * 16; i++)
    masked[i] = bits >= (i + 1) * 16 ? groups[i]! : groups[i]! & ((0xffff << (16 - (bits - i * 16))) & 0xffff);
  // Shortest form of the network's first address: the longest run of two or more zero groups as "::".
  let at = -1;
  let len = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && masked[j] === 0) j++;
    if (j - i > len) [at, len] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const join = (from: number, to: number) => {
    let out = "";
    for (let i = from; i < to; i++) out += i === from ? masked[i]!.toString(16) : `:${masked[i]!.toString(16)}`;
    return out;
  };
  const text = at < 0 ? join(0, 8) : `${join(0, at)}::${join(at + len, 8)}`;
  return { key: `${text}/${bits}`, family: "ipv6" };
}

/**
 * The network `address` belongs to: its first `prefixes.v4` (IPv4) or `prefixes.v6` (IPv6) bits,
 * written as a CIDR ("198.51.100.7/32", "2001:db8:1:2::/64"); IPv4-mapped IPv6 counts as IPv4,
 * zone ids and ports are dropped, any spelling of an address gives the same key. Text that is no
 * address is its own network (family "other"), cut to 64 characters.
 */
export function networkOf(address: string, prefixes: NetworkPrefixes): Network {
  const parsed = parseAddress(address);
  return parsed === null ? { key: `other:${address.slice(0, 64)}`, family: "other" } : networkKey(parsed, prefixes);
}

/** The network a client counts against, or null when it is exempt: no network peer (in-process), or this host. */
export function clientNetwork(address: string, prefixes: NetworkPrefixes): Network | null {
  if (address === UNKNOWN_CLIENT) return null;
  const parsed = parseAddress(address);
  if (parsed === null) return { key: `other:${address.slice(0, 64)}`, family: "other" };
  return isLoopbackBits(parsed) ? null : networkKey(parsed, prefixes);
}

/**
 * Token buckets by key: `rate` tokens per second, at most `burst` saved up. At most `maxKeys` are
 * kept, in two generations: keys seen lately, and those seen in the generation before; when the
 * newer is half full, the older one goes (its keys not seen since) and the newer takes its place.
 * A bucket left alone for burst/rate seconds is full again, the same as one never seen, so
 * forgetting the least recently seen costs nothing; memory stays bounded whatever the number of
 * clients, and each take is O(1) (a Map trimmed from its front instead was: JavaScriptCore's
 * iterator steps over the deleted entries, ~0.1 ms a request past 100,000 clients).
 */
class Buckets {
  private current = new Map<string, { tokens: number; at: number }>();
  private previous = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly maxKeys: number,
  ) {}

  /** The key's bucket, refilled to `now`, in the newer generation. */
  private bucket(key: string, now: number): { tokens: number; at: number } {
    let b = this.current.get(key);
    if (b === undefined) {
      b = this.previous.get(key);
      if (b !== undefined) this.previous.delete(key);
      b ??= { tokens: this.burst, at: now };
      this.current.set(key, b);
      if (this.current.size >= Math.max(1, this.maxKeys / 2)) {
        this.previous = this.current;
        this.current = new Map();
      }
    }
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rate);
    b.at = now;
    return b;
  }

  /** Takes `amount` tokens if the key has them; else how many seconds until it will. */
  take(key: string, amount: number, now: number): { ok: true } | { ok: false; retryAfterS: number } {
    const b = this.bucket(key, now);
    if (b.tokens >= amount) {
      b.tokens -= amount;
      return { ok: true };
    }
    return { ok: false, retryAfterS: Math.max(1, Math.ceil((amount - b.tokens) / this.rate)) };
  }

  /** Takes `amount` whether the key has it or not (a cost known only afterwards): the debt delays its next take. */
  charge(key: string, amount: number, now: number): void {
    this.bucket(key, now).tokens -= amount;
  }

  /** Whether the key has any tokens left. */
  has(key: string, now: number): boolean {
    return this.bucket(key, now).tokens > 0;
  }

  get size(): number {
    return this.current.size + this.previous.size;
  }
}

/** Distinct networks kept per set of buckets: with short keys, tens of MB at most (scripts/rate-limit-memory.ts). */
const MAX_NETWORKS = 100_000;

export interface RateLimiter {
  /** Takes one token of `network` (null: exempt); when none is left, how many seconds until one is, and the family. */
  take(network: Network | null, now: number): { ok: true } | { ok: false; retryAfterS: number; family: Family };
  readonly size: number;
}

/** `rate` requests per second per network, at most `burst` at once. */
export function createRateLimiter(rate: number, burst: number, maxNetworks = MAX_NETWORKS): RateLimiter {
  const buckets = new Buckets(rate, burst, maxNetworks);
  return {
    take(network, now) {
      if (network === null) return { ok: true };
      const verdict = buckets.take(network.key, 1, now);
      return verdict.ok ? verdict : { ...verdict, family: network.family };
    },
    get size() {
      return buckets.size;
    },
  };
}

/**
 * What one network may make the store keep besides its reports, per hour: this share of the
 * rejected-reports log's budget in bodies, and of the held reports' budget. Past it, its bodies
 * are logged with their head only (the entry stays, with size and hash), and its final reports
 * that come before their start are applied on their own at once instead of waiting; a bucket of
 * bytes per network, refilled over the hour. One network then fills at most 1/64 of either budget
 * an hour: the log's whole bodies and the waiting reports of everyone else stay.
 */
const SHARE = 1 / 64;

/** One budget's share per network (null: exempt, no share). */
interface ClientShare {
  /** Takes `bytes` from the network's share if it has them. */
  take(network: Network | null, bytes: number, now: number): boolean;
  /** Whether the network has any of its share left. */
  has(network: Network | null, now: number): boolean;
  /** Counts `bytes` against the network's share, whether it has them or not (a cost known only afterwards). */
  charge(network: Network | null, bytes: number, now: number): void;
}

export interface ClientCosts {
  /** Bodies kept in the rejected-reports log. */
  log: ClientShare;
  /** Reports held until their start report comes. */
  held: ClientShare;
}

function share(budget: number, maxNetworks: number): ClientShare {
  const buckets = new Buckets((budget * SHARE) / 3600, budget * SHARE, maxNetworks);
  return {
    take: (network, bytes, now) => network === null || buckets.take(network.key, bytes, now).ok,
    has: (network, now) => network === null || buckets.has(network.key, now),
    charge: (network, bytes, now) => void (network === null || buckets.charge(network.key, bytes, now)),
  };
}

export function createClientCosts(
  budgets: { logBytes: number; heldBytes: number },
  maxNetworks = MAX_NETWORKS,
): ClientCosts {
  return { log: share(budgets.logBytes, maxNetworks), held: share(budgets.heldBytes, maxNetworks) };
}

/** A matcher for trusted proxy addresses and CIDRs ("10.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"). */
export function proxyMatcher(list: readonly string[]): (address: string) => boolean {
  const block = new BlockList();
  for (const entry of list) {
    const [address, bits] = entry.split("/");
    const family = isIP(address ?? "") === 6 ? "ipv6" : "ipv4";
    if (isIP(address ?? "") === 0)
      throw new Error(`trusted proxy ${JSON.stringify(entry)} is not an IP address or CIDR`);
    if (bits === undefined) block.addAddress(address!, family);
    else block.addSubnet(address!, Number(bits), family);
  }
  // Asked for every report (the peer, then the limiter's key): answers are kept, and forgotten
  // all at once when there are many (a flood of addresses costs a few look-ups more, no memory).
  const known = new Map<string, boolean>();
  return (address) => {
    let answer = known.get(address);
    if (answer !== undefined) return answer;
    const plain = address.replace(/^::ffff:(?=\d+\.)/, ""); // IPv4-mapped IPv6
    const v = isIP(plain);
    answer = v !== 0 && block.check(plain, v === 6 ? "ipv6" : "ipv4");
    if (known.size >= 4096) known.clear();
    known.set(address, answer);
    return answer;
  };
}

const isLoopback = (address: string): boolean => {
  const parsed = parseAddress(address);
  return parsed !== null && isLoopbackBits(parsed);
};

/**
 * The client's address: the peer, unless the peer is a trusted proxy (or on this host); then the
 * right-most address in X-Forwarded-For that is not itself one (the left part can be forged).
 */
export function clientAddress(
  peer: string | null,
  forwardedFor: string | null,
  trusted: (a: string) => boolean,
): string {
  const direct = peer ?? UNKNOWN_CLIENT;
  const proxy = (a: string) => trusted(a) || isLoopback(a);
  if (!proxy(direct) || !forwardedFor) return direct;
  const hops = forwardedFor
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h !== "");
  for (let i = hops.length - 1; i >= 0; i--) if (!proxy(hops[i]!)) return hops[i]!;
  return hops[0] ?? direct;
}

/**
 * The network each request counts against (clientAddress, then clientNetwork), asked for every
 * report: what a peer is (a proxy or not) and its own network are kept, forgotten all at once when
 * there are many, and X-Forwarded-For is read only from a proxy.
 */
export function clientNetworkOf(trusted: (a: string) => boolean, prefixes: NetworkPrefixes) {
  const peers = new Map<string, { proxy: boolean; network: Network | null }>();
  return (peer: string | null, forwardedFor: () => string | null): Network | null => {
    if (peer === null) return null;
    let known = peers.get(peer);
    if (known === undefined) {
      known = { proxy: trusted(peer) || isLoopback(peer), network: clientNetwork(peer, prefixes) };
      if (peers.size >= 4096) peers.clear();
      peers.set(peer, known);
    }
    if (!known.proxy) return known.network;
    const hops = forwardedFor();
    return hops ? clientNetwork(clientAddress(peer, hops, trusted), prefixes) : known.network;
  };
}
