// The rate limiter (src/http/rate-limit.ts): a token bucket per client, bounded memory, and the
// client address taken from X-Forwarded-For only behind trusted proxies.
import { describe, expect, test } from "bun:test";
import { clientAddress, clientNetwork, createRateLimiter, proxyMatcher } from "../../src/http/rate-limit.ts";

describe("token bucket", () => {
  test("burst, then the rate; Retry-After says when the next token comes", async () => {
    const limiter = createRateLimiter(2, 3);
    const t0 = 1_000_000;
    const a = clientNetwork("192.0.2.10", { v4: 32, v6: 64 });
    expect([1, 2, 3].map(() => limiter.take(a, t0).ok)).toEqual([true, true, true]);
    expect(limiter.take(a, t0)).toEqual({ ok: false, retryAfterS: 1, family: "ipv4" });
    expect(limiter.take(clientNetwork("192.0.2.11", { v4: 32, v6: 64 }), t0).ok).toBe(true); // another client has its own bucket
    expect(limiter.take(a, t0 + 500).ok).toBe(true); // 0.5 s at 2/s = one token
    expect(limiter.take(a, t0 + 500).ok).toBe(false);
  });

  test("memory stays bounded: the least recently seen clients are forgotten", async () => {
    const limiter = createRateLimiter(1, 1, 100);
    for (let i = 0; i < 1000; i++) {
      limiter.take(clientNetwork(`10.0.${i >> 8}.${i & 255}`, { v4: 32, v6: 64 }), 0);
      expect(limiter.size).toBeLessThanOrEqual(100);
    }
  });

  test("X-Forwarded-For is believed only from trusted proxies, right-most untrusted hop first", async () => {
    const trusted = proxyMatcher(["10.0.0.0/8", "::1"]);
    expect(clientAddress("203.0.113.9", "1.2.3.4", trusted)).toBe("203.0.113.9"); // untrusted peer: header ignored
    expect(clientAddress("10.1.2.3", "198.51.100.7", trusted)).toBe("198.51.100.7");
    expect(clientAddress("10.1.2.3", "6.6.6.6, 198.51.100.7, 10.0.0.5", trusted)).toBe("198.51.100.7"); // forged left part skipped
    expect(clientAddress("::1", "192.0.2.1", trusted)).toBe("192.0.2.1");
    expect(clientAddress("::ffff:10.0.0.1", "192.0.2.2", trusted)).toBe("192.0.2.2");
    expect(clientAddress(null, "192.0.2.3", trusted)).toBe("unknown");
    expect(() => proxyMatcher(["not-an-ip"])).toThrow(/not an IP/);
  });
});
