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

/** The 16-bit groups of an IPv6 address (already checked by isIP), its zone id gone. */
function ipv6Groups(address: string): number[] {
  let text = address;
  let tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
    tail = [(a << 8) | b, (c << 8) | d];
    text = text.slice(0, -dotted[1]!.length);
    if (text.endsWith(":") && !text.endsWith("::")) text = text.slice(0, -1);
  }
  const [head, rest] = text.split("::") as [string, string | undefined];
  const part = (s: string | undefined) => (s === undefined || s === "" ? [] : s.split(":").map((g) => Number.parseInt(g, 16)));
  const left = part(head);
  const right = [...part(rest), ...tail];
  const fill = rest === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...fill, ...right];
}

/** An address as a family and its bits: IPv4 as one 32-bit number, IPv6 as eight 16-bit groups; null when it is none. */
function parseAddress(raw: string): { v4: number } | { v6: number[] } | null {
  let text = raw.trim();
  // "[2001:db8::1]:443", "[::1]", "192.0.2.1:5678": some proxies forward the port too.
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) text = bracketed[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(text)) text = text.slice(0, text.lastIndexOf(":"));
  const zone = text.indexOf("%"); // fe80::1%eth0: the zone names a link of this host, not part of the address
  if (zone >= 0) text = text.slice(0, zone);
  const kind = isIP(text);
  if (kind === 4) {
    const [a, b, c, d] = text.split(".").map(Number) as [number, number, number, number];
    return { v4: ((a << 24) | (b << 16) | (c << 8) | d) >>> 0 };
  }
  if (kind !== 6) return null;
  const groups = ipv6Groups(text);
  // IPv4-mapped (::ffff:a.b.c.d, also written ::ffff:c000:201): an IPv4 client on a dual-stack socket.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) return { v4: ((groups[6]! << 16) | groups[7]!) >>> 0 };
  return { v6: groups };
}

const isLoopbackBits = (p: { v4: number } | { v6: number[] }): boolean =>
  "v4" in p ? p.v4 >>> 24 === 127 : p.v6.slice(0, 7).every((g) => g === 0) && p.v6[7] === 1;

/**
 * The network `address` belongs to: its first `prefixes.v4` (IPv4) or `prefixes.v6` (IPv6) bits,
 * written as a CIDR ("198.51.100.7/32", "2001:db8:1:2::/64"); IPv4-mapped IPv6 counts as IPv4,
 * zone ids and ports are dropped, any spelling of an address gives the same key. Text that is no
 * address is its own network (family "other"), cut to 64 characters.
 */
export function networkOf(address: string, prefixes: NetworkPrefixes): Network {
  const parsed = parseAddress(address);
  if (parsed === null) return { key: `other:${address.slice(0, 64)}`, family: "other" };
  if ("v4" in parsed) {
    const bits = prefixes.v4;
    const masked = bits === 0 ? 0 : (parsed.v4 & (~0 << (32 - bits))) >>> 0;
    return { key: `${masked >>> 24}.${(masked >>> 16) & 255}.${(masked >>> 8) & 255}.${masked & 255}/${bits}`, family: "ipv4" };
  }
  const bits = prefixes.v6;
  const groups = parsed.v6.map((g, i) => {
    const keep = Math.max(0, Math.min(16, bits - i * 16));
    return keep === 0 ? 0 : g & ((0xffff << (16 - keep)) & 0xffff);
  });
  // Shortest form of the network's first address: the longest run of zero groups (two or more) as "::".
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len && j - i >= 2) best = { at: i, len: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  const text = best.at < 0 ? hex.join(":") : `${hex.slice(0, best.at).join(":")}::${hex.slice(best.at + best.len).join(":")}`;
  return { key: `${text}/${bits}`, family: "ipv6" };
}

const isLoopback = (address: string): boolean => {
  const parsed = parseAddress(address);
  return parsed !== null && isLoopbackBits(parsed);
};

/** Whether a request from `address` is exempt: no network peer, or this host. */
const exempt = (address: string): boolean => address === UNKNOWN_CLIENT || isLoopback(address);

/**
 * Token buckets by key: `rate` tokens per second, at most `burst` saved up. At most `maxKeys`
 * are kept: the least recently used goes first (a bucket left alone for burst/rate seconds is
 * full again, the same as one never seen), so memory stays bounded whatever the number of clients.
 */
class Buckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly maxKeys: number,
  ) {}

  /** The key's bucket, refilled to `now`, as the most recently used. */
  private bucket(key: string, now: number): { tokens: number; at: number } {
    let b = this.buckets.get(key);
    if (b) this.buckets.delete(key); // re-inserted: the Map's order is least recently used first
    b ??= { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rate);
    b.at = now;
    this.buckets.set(key, b);
    if (this.buckets.size > this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
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
    return this.buckets.size;
  }
}

/** Distinct networks kept per set of buckets: with short keys, tens of MB at most (scripts/rate-limit-memory.ts). */
const MAX_NETWORKS = 100_000;

export interface RateLimiter {
  /** Takes one token for the network `address` is in; when none is left, how many seconds until one is, and the family. */
  take(address: string, now: number): { ok: true } | { ok: false; retryAfterS: number; family: Family };
  readonly size: number;
}

/** `rate` requests per second per network, at most `burst` at once. */
export function createRateLimiter(rate: number, burst: number, prefixes: NetworkPrefixes = { v4: 32, v6: 64 }, maxNetworks = MAX_NETWORKS): RateLimiter {
  const buckets = new Buckets(rate, burst, maxNetworks);
  return {
    take(address, now) {
      if (exempt(address)) return { ok: true };
      const network = networkOf(address, prefixes);
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

/** One budget's share per network, by client address. */
interface ClientShare {
  /** Takes `bytes` from the network's share if it has them. */
  take(address: string, bytes: number, now: number): boolean;
  /** Whether the network has any of its share left. */
  has(address: string, now: number): boolean;
  /** Counts `bytes` against the network's share, whether it has them or not (a cost known only afterwards). */
  charge(address: string, bytes: number, now: number): void;
}

export interface ClientCosts {
  /** Bodies kept in the rejected-reports log. */
  log: ClientShare;
  /** Reports held until their start report comes. */
  held: ClientShare;
}

function share(budget: number, prefixes: NetworkPrefixes, maxNetworks: number): ClientShare {
  const buckets = new Buckets((budget * SHARE) / 3600, budget * SHARE, maxNetworks);
  const key = (address: string) => networkOf(address, prefixes).key;
  return {
    take: (address, bytes, now) => exempt(address) || buckets.take(key(address), bytes, now).ok,
    has: (address, now) => exempt(address) || buckets.has(key(address), now),
    charge: (address, bytes, now) => void (exempt(address) || buckets.charge(key(address), bytes, now)),
  };
}

export function createClientCosts(budgets: { logBytes: number; heldBytes: number }, prefixes: NetworkPrefixes, maxNetworks = MAX_NETWORKS): ClientCosts {
  return { log: share(budgets.logBytes, prefixes, maxNetworks), held: share(budgets.heldBytes, prefixes, maxNetworks) };
}

/** A matcher for trusted proxy addresses and CIDRs ("10.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"). */
export function proxyMatcher(list: readonly string[]): (address: string) => boolean {
  const block = new BlockList();
  for (const entry of list) {
    const [address, bits] = entry.split("/");
    const family = isIP(address ?? "") === 6 ? "ipv6" : "ipv4";
    if (isIP(address ?? "") === 0) throw new Error(`trusted proxy ${JSON.stringify(entry)} is not an IP address or CIDR`);
    if (bits === undefined) block.addAddress(address!, family);
    else block.addSubnet(address!, Number(bits), family);
  }
  return (address) => {
    const plain = address.replace(/^::ffff:(?=\d+\.)/, ""); // IPv4-mapped IPv6
    const v = isIP(plain);
    return v !== 0 && block.check(plain, v === 6 ? "ipv6" : "ipv4");
  };
}

/**
 * The client's address: the peer, unless the peer is a trusted proxy (or on this host); then the
 * right-most address in X-Forwarded-For that is not itself one (the left part can be forged).
 */
export function clientAddress(peer: string | null, forwardedFor: string | null, trusted: (a: string) => boolean): string {
  const direct = peer ?? UNKNOWN_CLIENT;
  const proxy = (a: string) => trusted(a) || isLoopback(a);
  if (!proxy(direct) || !forwardedFor) return direct;
  const hops = forwardedFor.split(",").map((h) => h.trim()).filter((h) => h !== "");
  for (let i = hops.length - 1; i >= 0; i--) if (!proxy(hops[i]!)) return hops[i]!;
  return hops[0] ?? direct;
}
