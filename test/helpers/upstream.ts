// A local upstream collector for the relay's tests: a real HTTP server on 127.0.0.1 that records
// every report it takes, and can be told to fail (503), hang (never answer), take a report and
// then never answer (the answer lost on the way: the relay must send it again), or refuse (400).
export type UpstreamMode = "ok" | "fail" | "hang" | "take-and-hang" | "refuse";

export interface Received {
  path: string;
  body: Record<string, unknown>;
  userAgent: string | null;
  contentType: string | null;
  authorization: string | null;
  /** Order of arrival. */
  n: number;
}

/** `delayMs`: how long each answer takes (a real upstream is not instantaneous). */
export async function startUpstream(opts: { delayMs?: number } = {}) {
  let mode: UpstreamMode = "ok";
  /** Paths answered 404 (an upstream without them: the community's service has no /upload). */
  let missing: readonly string[] = [];
  const received: Received[] = [];
  /** Requests held open (hang modes); answered 504 when the mode changes or the server stops. */
  const held = new Set<() => void>();
  let requests = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    // A hanging request stays open as long as the test wants.
    idleTimeout: 0,
    async fetch(req) {
      requests++;
      const text = await req.text();
      const record = () =>
        received.push({
          path: new URL(req.url).pathname,
          body: JSON.parse(text) as Record<string, unknown>,
          userAgent: req.headers.get("user-agent"),
          contentType: req.headers.get("content-type"),
          authorization: req.headers.get("authorization"),
          n: received.length,
        });
      if (missing.includes(new URL(req.url).pathname)) return new Response("404 page not found", { status: 404 });
      switch (mode) {
        case "fail":
          return new Response("the upstream is down", { status: 503 });
        case "refuse":
          return new Response("invalid payload", { status: 400 });
        case "take-and-hang":
        case "hang":
          if (mode === "take-and-hang") record();
          await new Promise<void>((resolve) => held.add(resolve));
          return new Response("gave up", { status: 504 });
        case "ok":
          record();
          if (opts.delayMs) await Bun.sleep(opts.delayMs);
          return new Response(JSON.stringify({ ok: true }), {
            status: 202,
            headers: { "content-type": "application/json" },
          });
      }
    },
  });
  const release = () => {
    for (const r of [...held]) r();
    held.clear();
  };
  return {
    url: `http://127.0.0.1:${server.port}`,
    received,
    /** Requests answered or held so far (refused and failed ones too). */
    requests: () => requests,
    /** Requests held open right now. */
    pending: () => held.size,
    setMissing(paths: readonly string[]) {
      missing = paths;
    },
    setMode(next: UpstreamMode) {
      mode = next;
      if (next !== "hang" && next !== "take-and-hang") release();
    },
    async stop() {
      release();
      await server.stop(true);
    },
  };
}

export type Upstream = Awaited<ReturnType<typeof startUpstream>>;

/** Polls `check` until it is true, or fails with `what` after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}
