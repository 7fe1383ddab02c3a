// Minimal reproduction, outside installstats: Bun.serve closes the connection, with nothing sent,
// when an HTTP/1.1 request is pipelined behind one whose answer is still pending (an async
// handler). The first request's AbortSignal fires and the second request is never dispatched.
// A handler that answers synchronously is not affected; node:http (on the same runtime) is not
// affected either. Upstream: oven-sh/bun pull requests 38128 (open), 33664, 35036 (closed).
//
//   bun scripts/repro/pipelining.ts
//
// prints, per server kind, how many of N pipelined requests were answered. installstats' own
// answer to the fault (nothing stored for an aborted request) is tested in test/hostile/pipelined-requests-never-store-unanswered.test.ts,
// which also runs this reproduction, so a Bun upgrade that fixes the runtime shows there.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** Sends `raw` in one write on one connection; resolves with what came back once the peer closes or goes quiet. */
export async function sendRaw(
  port: number,
  raw: string,
  quietMs = 300,
): Promise<{ text: string; closedByPeer: boolean }> {
  let text = "";
  let closedByPeer = false;
  const done = Promise.withResolvers<void>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const quiet = () => {
    clearTimeout(timer);
    timer = setTimeout(() => done.resolve(), quietMs);
  };
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_s, chunk) {
        text += chunk.toString();
        quiet();
      },
      close() {
        closedByPeer = true;
        done.resolve();
      },
      error() {
        done.resolve();
      },
    },
  });
  socket.write(raw);
  quiet();
  await done.promise;
  clearTimeout(timer);
  socket.end();
  return { text, closedByPeer };
}

/** Status codes of the HTTP/1.1 answers in `text`, in order. */
export const statuses = (text: string): number[] => [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

export interface ReproResult {
  /** Answers to `n` pipelined GETs: a Bun.serve handler that answers synchronously. */
  syncHandler: number;
  /** The same with `await Bun.sleep(5)` before answering. */
  asyncHandler: number;
  /** node:http on the same runtime, with the same await. */
  nodeHttp: number;
  /** True when Bun.serve still drops pipelined requests behind a pending answer. */
  runtimeBug: boolean;
}

export async function reproduce(n = 3): Promise<ReproResult> {
  const raw = Array.from({ length: n }, (_, i) => get(`/${i}`)).join("");
  const sync = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") });
  const pending = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch() {
      await Bun.sleep(5);
      return new Response("ok");
    },
  });
  const node = createServer((_req, res) => void Bun.sleep(5).then(() => res.end("ok")));
  await new Promise<void>((listening) => node.listen(0, "127.0.0.1", listening));
  try {
    const syncHandler = statuses((await sendRaw(sync.port!, raw)).text).length;
    const asyncHandler = statuses((await sendRaw(pending.port!, raw)).text).length;
    const nodeHttp = statuses((await sendRaw((node.address() as AddressInfo).port, raw)).text).length;
    return { syncHandler, asyncHandler, nodeHttp, runtimeBug: asyncHandler < n };
  } finally {
    await sync.stop(true);
    await pending.stop(true);
    node.closeAllConnections();
    await new Promise((closed) => node.close(closed));
  }
}

if (import.meta.main) {
  const n = 3;
  const r = await reproduce(n);
  console.log(`Bun ${Bun.version}: ${n} pipelined GETs on one connection, answers received:`);
  console.log(`  Bun.serve, synchronous handler:  ${r.syncHandler}`);
  console.log(`  Bun.serve, async handler:        ${r.asyncHandler}`);
  console.log(`  node:http, async handler:        ${r.nodeHttp}`);
  console.log(
    r.runtimeBug
      ? "runtime fault present: Bun.serve closes a pipelined connection behind a pending answer"
      : "runtime fault absent in this Bun",
  );
}
