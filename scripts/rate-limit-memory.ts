// Memory of the per-network rate limiter and budget shares under millions of distinct client
// addresses (issue 26): each case takes a token for every address in turn, then reports the
// buckets kept, the JS heap and RSS after a full collection (minus the process's own before the
// case), and the CPU time per request (its network, the limiter and the two shares). The last
// line is the limiter as it was before (one Map trimmed from its front), on the same addresses,
// for comparison: JavaScriptCore's Map iterator steps over deleted entries, so each new client
// past the bound cost more than the one before.
//
//   bun scripts/rate-limit-memory.ts [addresses]       default: 1000000
import { clientNetwork, createClientCosts, createRateLimiter } from "../src/http/rate-limit.ts";

const N = Number(process.argv[2] ?? 1_000_000);
const mib = (bytes: number) => (bytes / 1048576).toFixed(1);

function measure(name: string, address: (i: number) => string): void {
  Bun.gc(true);
  const before = process.memoryUsage();
  const limiter = createRateLimiter(5, 60);
  const costs = createClientCosts({ logBytes: 64 * 1024 * 1024, heldBytes: 16 * 1024 * 1024 });
  const started = process.cpuUsage();
  let limited = 0;
  const now = Date.now();
  for (let i = 0; i < N; i++) {
    // As a request does: its network once, then the limiter and the shares by it.
    const a = clientNetwork(address(i), { v4: 32, v6: 64 });
    if (!limiter.take(a, now).ok) limited++;
    // What an ingest request asks of the shares besides (a refused body, a held report).
    costs.log.take(a, 200, now);
    costs.held.has(a, now);
  }
  const cpu = process.cpuUsage(started);
  const ns = ((cpu.user + cpu.system) * 1000) / N;
  Bun.gc(true);
  const after = process.memoryUsage();
  console.log(
    `${name}\t${N.toLocaleString("en-US")}\t${limiter.size.toLocaleString("en-US")}\t${limited.toLocaleString("en-US")}\t${mib(after.heapUsed - before.heapUsed)}\t${mib(after.rss - before.rss)}\t${mib(after.rss)}\t${ns.toFixed(0)}`,
  );
  // Kept alive until measured.
  void costs;
}

console.log("addresses\tdistinct\tbuckets kept\trefused\theap +MiB\tRSS +MiB\tRSS MiB\tCPU ns per request");
const hex = (n: number) => n.toString(16);
measure("IPv6, each in its own /64", (i) => `2001:db8:${hex((i >>> 16) & 0xffff)}:${hex(i & 0xffff)}:1:2:3:4`);
measure("IPv6, all in one /64", (i) => `2001:db8:1:1:${hex((i >>> 16) & 0xffff)}:${hex(i & 0xffff)}:5:6`);
measure(
  "IPv4, each its own host",
  (i) => `${10 + ((i >>> 24) & 0x3f)}.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`,
);
measure(
  "IPv4-mapped IPv6",
  (i) => `::ffff:${10 + ((i >>> 24) & 0x3f)}.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`,
);

// The limiter before: one Map, the least recently used deleted from its front past 100,000 keys.
{
  const buckets = new Map<string, { tokens: number; at: number }>();
  const n = Math.min(N, 300_000);
  const started = process.cpuUsage();
  const now = Date.now();
  for (let i = 0; i < n; i++) {
    const key = clientNetwork(`2001:db8:${hex((i >>> 16) & 0xffff)}:${hex(i & 0xffff)}:1:2:3:4`, {
      v4: 32,
      v6: 64,
    })!.key;
    let b = buckets.get(key);
    if (b) buckets.delete(key);
    b ??= { tokens: 60, at: now };
    buckets.set(key, b);
    if (buckets.size > 100_000) buckets.delete(buckets.keys().next().value!);
  }
  const cpu = process.cpuUsage(started);
  console.log(
    `before: one Map trimmed from its front, IPv6 in own /64s\t${n.toLocaleString("en-US")}\t${buckets.size.toLocaleString("en-US")}\t-\t-\t-\t-\t${(((cpu.user + cpu.system) * 1000) / n).toFixed(0)}`,
  );
}
