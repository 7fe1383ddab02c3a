// Rate limit by network, not by address (issue 26): IPv6 clients share a bucket per /64 (prefix
// lengths configurable for both families), IPv4 one per address; an IPv4-mapped IPv6 address is
// IPv4, zone ids and ports are dropped, every spelling of an address is the same client. The same
// keying bounds what one network can make the store keep besides its reports (its shares of the
// rejected-reports log and of held reports). Through a proxy, over HTTP:
// test/http/rate-limit-by-network-behind-a-proxy.test.ts.
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config.ts";
import { clientNetwork, createClientCosts, createRateLimiter, networkOf } from "../../src/http/rate-limit.ts";

const P = { v4: 32, v6: 64 };
/** The network a client address counts as with the default prefixes; null for this host. */
const net = (address: string) => clientNetwork(address, P);

describe("networkOf: the network an address counts as", () => {
  const cases: [string, { v4: number; v6: number }, string, string][] = [
    // address, prefixes, key, family
    ["198.51.100.7", P, "198.51.100.7/32", "ipv4"],
    ["198.51.100.7", { v4: 24, v6: 64 }, "198.51.100.0/24", "ipv4"],
    ["198.51.100.7", { v4: 1, v6: 64 }, "128.0.0.0/1", "ipv4"],
    ["10.255.255.255", { v4: 8, v6: 64 }, "10.0.0.0/8", "ipv4"],
    ["198.51.100.7:53211", P, "198.51.100.7/32", "ipv4"], // a proxy that forwards the port
    ["::ffff:198.51.100.7", P, "198.51.100.7/32", "ipv4"], // IPv4-mapped: an IPv4 client on a dual-stack socket
    ["::FFFF:198.51.100.7", P, "198.51.100.7/32", "ipv4"],
    ["::ffff:c633:6407", P, "198.51.100.7/32", "ipv4"], // the same, in hex
    ["0:0:0:0:0:ffff:c633:6407", P, "198.51.100.7/32", "ipv4"],
    ["2001:db8:1:2:3:4:5:6", P, "2001:db8:1:2::/64", "ipv6"],
    ["2001:0db8:0001:0002:ffff:ffff:ffff:ffff", P, "2001:db8:1:2::/64", "ipv6"], // leading zeros, the /64's last address
    ["2001:DB8:1:2::1", P, "2001:db8:1:2::/64", "ipv6"], // upper case, compressed
    ["2001:db8:1:2::", P, "2001:db8:1:2::/64", "ipv6"],
    ["[2001:db8:1:2::9]:443", P, "2001:db8:1:2::/64", "ipv6"], // bracketed with a port
    ["[2001:db8:1:2::9]", P, "2001:db8:1:2::/64", "ipv6"],
    ["fe80::1%eth0", P, "fe80::/64", "ipv6"], // a zone id names a link of this host
    ["fe80::1%25eth0", P, "fe80::/64", "ipv6"],
    ["2001:db8:1:2ff::1", { v4: 32, v6: 56 }, "2001:db8:1:200::/56", "ipv6"],
    ["2001:db8:1:2ff::1", { v4: 32, v6: 48 }, "2001:db8:1::/48", "ipv6"],
    ["2001:db8::1", { v4: 32, v6: 128 }, "2001:db8::1/128", "ipv6"],
    ["2001:db8::ffff", { v4: 32, v6: 127 }, "2001:db8::fffe/127", "ipv6"],
    ["::", P, "::/64", "ipv6"],
    ["64:ff9b::198.51.100.7", P, "64:ff9b::/64", "ipv6"], // NAT64 is IPv6: the translator's network
    ["2001:db8:0:0:1:0:0:1", { v4: 32, v6: 128 }, "2001:db8::1:0:0:1/128", "ipv6"], // the longest zero run is compressed
    ["not-an-address", P, "other:not-an-address", "other"],
    ["unknown", P, "other:unknown", "other"],
    ["999.1.1.1", P, "other:999.1.1.1", "other"],
  ];
  for (const [address, prefixes, key, family] of cases) {
    test(`${address} (v4 /${prefixes.v4}, v6 /${prefixes.v6}) -> ${key}`, () => {
      expect(networkOf(address, prefixes)).toEqual({ key, family: family as "ipv4" });
    });
  }

  test("every address of a /64 is the same network; the next /64 is another", () => {
    const keys = new Set<string>();
    for (let i = 0; i < 1000; i++)
      keys.add(
        networkOf(`2001:db8:aa:bb:${((i * 7919) % 65536).toString(16)}:${i.toString(16)}::${(i % 97).toString(16)}`, P)
          .key,
      );
    expect([...keys]).toEqual(["2001:db8:aa:bb::/64"]);
    expect(networkOf("2001:db8:aa:bc::1", P).key).not.toBe("2001:db8:aa:bb::/64");
  });
});

describe("the limiter by network", () => {
  test("one bucket per /64, one per IPv4 address; loopback (any spelling) is never limited; memory stays bounded", () => {
    const limiter = createRateLimiter(1, 3);
    const t0 = 5_000_000;
    const inNet = (i: number) => `2001:db8:77:1:${i.toString(16)}::1`;
    expect([0, 1, 2].map((i) => limiter.take(net(inNet(i)), t0).ok)).toEqual([true, true, true]);
    expect(limiter.take(net(inNet(3)), t0)).toEqual({ ok: false, retryAfterS: 1, family: "ipv6" });
    expect(limiter.take(net("2001:db8:77:2::1"), t0).ok).toBe(true); // the next /64
    for (let i = 0; i < 3; i++) expect(limiter.take(net(`192.0.2.${i}`), t0).ok).toBe(true);
    expect(limiter.take(net("::ffff:192.0.2.0"), t0).ok).toBe(true); // the same host as 192.0.2.0: its second token
    expect(limiter.take(net("192.0.2.0"), t0).ok).toBe(true);
    expect(limiter.take(net("192.0.2.0"), t0)).toEqual({ ok: false, retryAfterS: 1, family: "ipv4" });
    for (const local of [
      "127.0.0.1",
      "127.8.9.10",
      "::1",
      "::ffff:127.0.0.1",
      "0:0:0:0:0:0:0:1",
      "[::1]:8080",
      "unknown",
    ]) {
      expect(net(local)).toBeNull();
      for (let i = 0; i < 10; i++) expect(limiter.take(net(local), t0).ok).toBe(true);
    }
    const bounded = createRateLimiter(1, 1, 1000);
    for (let i = 0; i < 20_000; i++) {
      bounded.take(net(`2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`), t0);
      expect(bounded.size).toBeLessThanOrEqual(1000);
    }
    expect(bounded.size).toBeGreaterThanOrEqual(500);
  });

  test("--rate-limit-v4-prefix and --rate-limit-v6-prefix (and INSTALLSTATS_*) through the one config table", () => {
    expect(loadConfig({}, {})).toMatchObject({ rateLimitV4Prefix: 32, rateLimitV6Prefix: 64 });
    expect(loadConfig({ "rate-limit-v6-prefix": "56", "rate-limit-v4-prefix": "/24" }, {})).toMatchObject({
      rateLimitV4Prefix: 24,
      rateLimitV6Prefix: 56,
    });
    expect(
      loadConfig({}, { INSTALLSTATS_RATE_LIMIT_V6_PREFIX: "48", INSTALLSTATS_RATE_LIMIT_V4_PREFIX: "30" }),
    ).toMatchObject({ rateLimitV4Prefix: 30, rateLimitV6Prefix: 48 });
    expect(() => loadConfig({ "rate-limit-v4-prefix": "33" }, {})).toThrow(
      '--rate-limit-v4-prefix: must be a prefix length from 1 to 32, such as 32 or 24, got "33"',
    );
    expect(() => loadConfig({}, { INSTALLSTATS_RATE_LIMIT_V6_PREFIX: "0" })).toThrow(
      "INSTALLSTATS_RATE_LIMIT_V6_PREFIX: must be a prefix length from 1 to 128",
    );
    expect(() => loadConfig({ "rate-limit-v6-prefix": "64.5" }, {})).toThrow("must be a prefix length");
  });
});

describe("each network's share of what the store keeps besides reports", () => {
  test("the shares by network: a /64 shares one, IPv4 hosts have their own, refilled over the hour", () => {
    const costs = createClientCosts({ logBytes: 64 * 1024, heldBytes: 64 * 1024 }); // 1 KiB each an hour
    const t0 = 9_000_000;
    expect(costs.log.take(net("2001:db8:1:1::1"), 800, t0)).toBe(true);
    expect(costs.log.take(net("2001:db8:1:1::2"), 800, t0)).toBe(false); // the same /64: 224 bytes left
    expect(costs.log.take(net("2001:db8:1:2::1"), 800, t0)).toBe(true);
    expect(costs.log.take(net("192.0.2.1"), 1000, t0)).toBe(true);
    expect(costs.log.take(net("192.0.2.2"), 1000, t0)).toBe(true);
    expect(costs.held.has(net("192.0.2.1"), t0)).toBe(true);
    costs.held.charge(net("192.0.2.1"), 5000, t0); // a cost found afterwards: a debt
    expect(costs.held.has(net("192.0.2.1"), t0)).toBe(false);
    expect(costs.held.has(net("192.0.2.1"), t0 + 3 * 3600_000)).toBe(false); // 3 KiB back of a 4 KiB debt
    expect(costs.held.has(net("192.0.2.1"), t0 + 5 * 3600_000)).toBe(true);
    expect(costs.log.take(net("127.0.0.1"), 10_000_000, t0)).toBe(true); // this host: no share
    expect(costs.log.take(net("2001:db8:1:1::1"), 800, t0 + 3600_000)).toBe(true); // refilled
  });
});
