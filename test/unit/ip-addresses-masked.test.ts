import { describe, expect, test } from "bun:test";
import { IPV4_MASK, IPV6_MASK, maskIpAddresses } from "../../src/domain/mask-ips.ts";

// Every case: [what it is, input text, exact expected output].
type Case = [name: string, input: string, expected: string];

describe("mask constants", () => {
  test("placeholders are <ipv4> and <ipv6>", async () => {
    expect(IPV4_MASK).toBe("<ipv4>");
    expect(IPV6_MASK).toBe("<ipv6>");
  });
});

const IPV4_CASES: Case[] = [
  ["bare private address", "192.168.1.5", "<ipv4>"],
  [
    "curl connect failure",
    "curl: (7) Failed to connect to 203.0.113.7 port 443 after 3 ms: Connection refused",
    "curl: (7) Failed to connect to <ipv4> port 443 after 3 ms: Connection refused",
  ],
  [
    "inside a URL with port and path",
    "Failed to fetch http://192.168.1.5:8006/api2/json",
    "Failed to fetch http://<ipv4>:8006/api2/json",
  ],
  [
    "apt proxy URL in an Err: line",
    "Err:3 http://192.168.1.10:3142/debian bookworm Release",
    "Err:3 http://<ipv4>:3142/debian bookworm Release",
  ],
  ["CIDR suffix kept", "route 10.0.0.0/8 unreachable", "route <ipv4>/8 unreachable"],
  [
    "ip addr line: address and broadcast",
    "inet 192.168.1.50/24 brd 192.168.1.255 scope global eth0",
    "inet <ipv4>/24 brd <ipv4> scope global eth0",
  ],
  ["sentence-final period kept", "Could not reach 10.1.2.3.", "Could not reach <ipv4>."],
  ["ellipsis after address", "Pinging 8.8.8.8...", "Pinging <ipv4>..."],
  ["user@host", "ssh root@192.168.1.2 failed", "ssh root@<ipv4> failed"],
  ["list separated by comma, semicolon", "IP=10.1.2.3;GW=10.1.2.1,DNS=1.1.1.1", "IP=<ipv4>;GW=<ipv4>,DNS=<ipv4>"],
  ["in parentheses", "host pve (172.16.0.1) is down", "host pve (<ipv4>) is down"],
  ["all-zero and broadcast", "bind 0.0.0.0 / 255.255.255.255", "bind <ipv4> / <ipv4>"],
  [
    "multi-line text, one per line",
    "nameserver 1.1.1.1\nnameserver 9.9.9.9\n",
    "nameserver <ipv4>\nnameserver <ipv4>\n",
  ],
  ["glued to a word", "gw=10.0.0.1(dev vmbr0)", "gw=<ipv4>(dev vmbr0)"],
];

const IPV6_CASES: Case[] = [
  ["loopback ::1", "connect to ::1 port 5432 failed", "connect to <ipv6> port 5432 failed"],
  // A lone "::" identifies nobody and is far more often pacman's prompt: left alone.
  ["unspecified :: in brackets is left alone", "listen [::]:80 and 0.0.0.0:80", "listen [::]:80 and <ipv4>:80"],
  ["pacman prompt", ":: Synchronizing package databases...", ":: Synchronizing package databases..."],
  ["link-local with zone id", "ping fe80::1%eth0 failed", "ping <ipv6> failed"],
  ["link-local, Proxmox bridge zone", "neighbour fe80::be24:11ff:fe5a:1b2c%vmbr0 STALE", "neighbour <ipv6> STALE"],
  ["IPv4-mapped", "client ::ffff:10.0.0.1 refused", "client <ipv6> refused"],
  ["NAT64 with embedded IPv4", "via 64:ff9b::192.0.2.33", "via <ipv6>"],
  ["CIDR suffix kept", "inet6 2001:db8::1/64 scope global", "inet6 <ipv6>/64 scope global"],
  [
    "bracketed with port",
    "dial tcp [2a01:4f8:c17:b8f::2]:443: connect: network is unreachable",
    "dial tcp [<ipv6>]:443: connect: network is unreachable",
  ],
  ["URL with brackets", "GET http://[::1]:8006/api2/json failed", "GET http://[<ipv6>]:8006/api2/json failed"],
  ["URL with percent-encoded zone", "http://[fe80::1%25eth0]:8006/", "http://[<ipv6>]:8006/"],
  ["full uncompressed form", "addr 2001:0db8:85a3:0000:0000:8a2e:0370:7334 dead", "addr <ipv6> dead"],
  ["upper case hex", "2001:DB8:0:0:8:800:200C:417A", "<ipv6>"],
  ["sentence-final period kept", "Could not reach 2001:db8::1.", "Could not reach <ipv6>."],
  ["closing bracket right after", "[::1]", "[<ipv6>]"],
  // Network prefixes end in "::" and identify a site (a /48 or /56 is one customer).
  ["prefix ending in :: with CIDR", "route 2001:db8::/32 via vmbr0", "route <ipv6>/32 via vmbr0"],
  ["delegated /48 prefix", "add fd12:3456:789a::/48 failed", "add <ipv6>/48 failed"],
  ["bare prefix ending in ::", "prefix fe80:: on eth0", "prefix <ipv6> on eth0"],
  ["zone id then sentence-final period", "Could not reach fe80::1%eth0.", "Could not reach <ipv6>."],
  // Six colons and an embedded IPv4, no "::": the fewest colons an address without "::" has.
  ["six groups and an embedded IPv4", "via 64:ff9b:1:2:3:4:192.0.2.33 now", "via <ipv6> now"],
  [
    "after clock times",
    "[10:05:35] step 1: 12:34:56 then 64:ff9b:1:2:3:4:192.0.2.33",
    "[10:05:35] step 1: 12:34:56 then <ipv6>",
  ],
];

const UNTOUCHED: string[] = [
  "",
  "No error message",
  "pve-manager/8.2.2/9355359cd7afbae4 (running kernel: 6.8.12-4-pve)",
  "version 8.2.2",
  "libfoo 1.2.3.4.5 is too old",
  "1.2.3.4.5.6",
  "bad address 999.1.1.1",
  "256.1.1.1 and 10.0.0.256",
  "only three parts 192.168.1",
  "Started at 12:34:56, finished at 12:35:01",
  "elapsed 10:20:30.123",
  "link/ether bc:24:11:5a:1b:2c brd ff:ff:ff:ff:ff:ff",
  "MAC 00:1A:2B:3C:4D:5E",
  "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "std::string and Foo::Bar::baz",
  "Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]",
  "Setting up nginx (1.22.1-9+deb12u1) ...",
  "date 2024.01.15",
  "Python 3.11.2, node v20.11.1",
  "[10:05:35] step 1 of build 2: compiling module_1.c -> module_1.o",
  "1:2:3:4:5:6 and ab:cd:ef:12:34:56:78",
];

describe("maskIpAddresses: IPv4", () => {
  test.each(IPV4_CASES)("%s", (_name, input, expected) => {
    expect(maskIpAddresses(input)).toBe(expected);
  });
});

describe("maskIpAddresses: IPv6", () => {
  test.each(IPV6_CASES)("%s", (_name, input, expected) => {
    expect(maskIpAddresses(input)).toBe(expected);
  });
});

describe("maskIpAddresses: text that is not an address is left alone", () => {
  test.each(UNTOUCHED.map((text) => [JSON.stringify(text), text] as const))("%s", (_name, text) => {
    expect(maskIpAddresses(text)).toBe(text);
  });
});

describe("maskIpAddresses: properties", () => {
  test("masking is idempotent", async () => {
    for (const [, input] of [...IPV4_CASES, ...IPV6_CASES]) {
      const once = maskIpAddresses(input);
      expect(maskIpAddresses(once)).toBe(once);
    }
  });

  test("a real multi-line error keeps its layout", async () => {
    const text = [
      "Err:1 http://192.168.1.10:3142/debian bookworm InRelease",
      "  Could not connect to 192.168.1.10:3142 (192.168.1.10). - connect (111: Connection refused)",
      "\tresolv: [2001:db8:1::53]:53 timed out at 12:34:56",
    ].join("\n");
    expect(maskIpAddresses(text)).toBe(
      [
        "Err:1 http://<ipv4>:3142/debian bookworm InRelease",
        "  Could not connect to <ipv4>:3142 (<ipv4>). - connect (111: Connection refused)",
        "\tresolv: [<ipv6>]:53 timed out at 12:34:56",
      ].join("\n"),
    );
  });

  // Error texts are masked before they are cut, so the whole body (up to 256 KiB) goes
  // through these expressions: the time must grow linearly, not quadratically.
  test.each([
    ["colons", ":".repeat(32_000)],
    ["hex:colon run", "a:".repeat(16_000)],
    ["hex:colon run ending in a word", "a:".repeat(16_000) + "x"],
    ["digit.dot run", "1.".repeat(16_000)],
  ])("32k characters of %s are scanned quickly", (_name, text) => {
    const started = performance.now();
    const out = maskIpAddresses(text);
    const elapsed = performance.now() - started;
    expect(out).toBe(text);
    expect(elapsed).toBeLessThan(250);
  });
});
