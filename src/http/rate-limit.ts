// Per-client token buckets for ingestion, and which address a request comes from.
//
// On by default (config.ts): 5 reports per second per address with a burst of 60, the figures of
// the community's own service (300 per minute). An installer run sends 4 to 10 reports over
// minutes, so no real run (nor dozens at once behind one address) meets the limit.
// Not limited: requests with no network peer (in-process, `app.handle`) and loopback peers (this
// host: local tools, benchmarks). A loopback peer is a proxy on this host: its X-Forwarded-For is
// believed as a trusted proxy's would be, so a reverse proxy on the same host works without
// --trusted-proxies; a proxy on another host must be listed there, or all its clients share one bucket.
import { BlockList, isIP } from "node:net";

export interface RateLimiter {
  /** Takes one token for `key`; when none is left, how many seconds until one is. */
  take(key: string, now: number): { ok: true } | { ok: false; retryAfterS: number };
  readonly size: number;
}

/** `rate` tokens per second, at most `burst` saved up. Idle clients are forgotten (bounded memory). */
export function createRateLimiter(rate: number, burst: number, maxClients = 100_000): RateLimiter {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(key, now) {
      if (key === UNKNOWN_CLIENT || isLoopback(key)) return { ok: true };
      let b = buckets.get(key);
      if (b) buckets.delete(key); // re-inserted: the Map's order is least recently used first
      b ??= { tokens: burst, at: now };
      b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * rate);
      b.at = now;
      buckets.set(key, b);
      if (buckets.size > maxClients) buckets.delete(buckets.keys().next().value!);
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return { ok: true };
      }
      return { ok: false, retryAfterS: Math.max(1, Math.ceil((1 - b.tokens) / rate)) };
    },
    get size() {
      return buckets.size;
    },
  };
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

/** The key of a request without a network peer (in-process): never limited. */
const UNKNOWN_CLIENT = "unknown";
const isLoopback = proxyMatcher(["127.0.0.0/8", "::1"]);

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
