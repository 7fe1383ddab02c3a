// The network each report counts against (src/http/rate-limit.ts clientNetworkOf): what a peer is
// is kept between requests, and X-Forwarded-For is read only when the peer is a proxy, with the
// same answers as clientAddress then clientNetwork give each time.
import { expect, test } from "bun:test";
import { clientAddress, clientNetwork, clientNetworkOf, proxyMatcher } from "../../src/http/rate-limit.ts";

const prefixes = { v4: 24, v6: 48 };
const trusted = proxyMatcher(["10.0.0.0/8"]);

test("the same networks as reading the header every time, the header read only from proxies", () => {
  const networkOf = clientNetworkOf(trusted, prefixes);
  const cases: [string | null, string | null][] = [
    ["203.0.113.9", "1.2.3.4"], // no proxy: its own network, the header ignored
    ["203.0.113.9", null],
    ["10.1.2.3", "198.51.100.7"], // a trusted proxy: the client it forwards
    ["10.1.2.3", "6.6.6.6, 198.51.100.7, 10.0.0.5"],
    ["10.1.2.3", null], // a proxy forwarding nobody: itself
    ["127.0.0.1", "192.0.2.1"], // this host is a proxy
    ["127.0.0.1", null], // this host alone is exempt
    ["::1", null],
    ["2001:db8:1:2::9", "192.0.2.1"],
    [null, "192.0.2.3"], // no peer (in-process)
  ];
  for (let round = 0; round < 2; round++) {
    for (const [peer, header] of cases) {
      let reads = 0;
      const got = networkOf(peer, () => {
        reads++;
        return header;
      });
      expect(got).toEqual(clientNetwork(clientAddress(peer, header, trusted), prefixes));
      const proxy = peer !== null && (trusted(peer) || peer === "127.0.0.1" || peer === "::1");
      expect({ peer, reads }).toEqual({ peer, reads: proxy ? 1 : 0 });
    }
  }
});

test("a flood of peers keeps answering right (what is kept is forgotten all at once)", () => {
  const networkOf = clientNetworkOf(trusted, prefixes);
  for (let i = 0; i < 10_000; i++) {
    const peer = `198.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    expect(networkOf(peer, () => null)?.key).toBe(`198.${(i >> 16) & 255}.${(i >> 8) & 255}.0/24`);
  }
});
