// Pipelined HTTP/1.1 requests (issue 15): Bun.serve closes a connection on which a request arrives
// while the answer ahead of it is pending (scripts/repro/pipelining.ts). Whatever the runtime does,
// installstats never stores a report it cannot acknowledge: a write whose request was aborted
// before its batch formed is dropped (src/store/writer.ts).
import { afterEach, describe, expect, test } from "bun:test";
import { reproduce, sendRaw, statuses } from "../../scripts/repro/pipelining.ts";
import { startReport, testApp, type TestApp } from "../helpers/app.ts";
import { createWriter, RequestAbortedError } from "../../src/store/writer.ts";
import type { WriteOp, WriteResult } from "../../src/store/contract/store.ts";

let running: TestApp | null = null;
afterEach(async () => {
  await running?.app.stop(true);
  running = null;
});

async function listening(): Promise<{ t: TestApp; port: number }> {
  const t = await testApp();
  t.app.listen({ hostname: "127.0.0.1", port: 0 });
  running = t;
  return { t, port: t.app.server!.port! };
}

const post = (path: string, body: string) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

const count = (t: TestApp, like: string) =>
  (t.sqlite.query("SELECT count(*) AS n FROM executions WHERE random_id LIKE ?").get(like) as { n: number }).n;
const rejectedCount = (t: TestApp) =>
  (t.sqlite.query("SELECT count(*) AS n FROM rejected_reports").get() as { n: number }).n;

const telemetry = (id: string) =>
  JSON.stringify({
    random_id: id,
    execution_id: id,
    type: "lxc",
    nsapp: "debian",
    status: "installing",
    os_type: "debian",
    os_version: "12",
  });

describe("pipelined requests", () => {
  test("the runtime's behaviour, as the reproduction finds it", async () => {
    const r = await reproduce(3);
    // A synchronous answer and node:http are never affected; Bun.serve 1.4.5 drops all three behind an async one.
    expect(r.syncHandler).toBe(3);
    expect(r.nodeHttp).toBe(3);
    console.log(
      `Bun ${Bun.version}: runtime fault ${r.runtimeBug ? "present" : "absent"} (async handler answered ${r.asyncHandler} of 3)`,
    );
  });

  test("100 pipelined POST /upload: answered in order, or nothing stored", async () => {
    const { runtimeBug } = await reproduce(2);
    const { t, port } = await listening();
    const raw = Array.from({ length: 100 }, (_, i) => post("/upload", JSON.stringify(startReport(`pipe-${i}`)))).join(
      "",
    );
    const { text } = await sendRaw(port, raw);
    await t.writer.drain();
    const answers = statuses(text);
    if (runtimeBug) {
      expect(answers).toEqual([]);
      expect(count(t, "pipe-%")).toBe(0); // was 1: stored, never acknowledged
    } else {
      expect(answers).toEqual(Array(100).fill(201));
      expect(count(t, "pipe-%")).toBe(100);
    }
    // The server is unharmed: the next connection is answered, and its report stored.
    const single = await sendRaw(port, post("/upload", JSON.stringify(startReport("single"))));
    expect(statuses(single.text)).toEqual([201]);
    expect(count(t, "single")).toBe(1);
  });

  test("/telemetry, /upload/updatestatus, a GET behind a POST and pipelined junk: nothing stored unanswered", async () => {
    const { runtimeBug } = await reproduce(2);
    const { t, port } = await listening();
    const raws = [
      post("/telemetry", telemetry("tel-1")) + post("/telemetry", telemetry("tel-2")),
      post("/upload", JSON.stringify(startReport("mix-1"))) + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
      post("/upload/updatestatus", JSON.stringify({ random_id: "held-1", status: "done" })) +
        post("/upload/updatestatus", JSON.stringify({ random_id: "held-2", status: "done" })),
      post("/upload", "{broken") + post("/upload", "{broken too"),
    ];
    const before = rejectedCount(t);
    const answered: number[][] = [];
    for (const raw of raws) answered.push(statuses((await sendRaw(port, raw)).text));
    await t.writer.drain();
    if (!runtimeBug) return;
    expect(answered).toEqual([[], [], [], []]);
    expect(count(t, "tel-%") + count(t, "mix-%")).toBe(0);
    expect((t.sqlite.query("SELECT count(*) AS n FROM held_reports").get() as { n: number }).n).toBe(0);
    expect(rejectedCount(t)).toBe(before);
    // Bun dispatches only the first request of each connection; its write is the one dropped.
    expect(t.writer.stats.dropped).toBe(4);
    // Logged as what it is, not as an unhandled error.
    const lines = t.logLines.join("");
    expect(lines).toContain("request aborted before its report was stored");
    expect(lines).not.toContain("unhandled error");
  });

  test("requests one after another on one keep-alive connection are all answered, in order", async () => {
    const { t, port } = await listening();
    const got: number[] = [];
    let buffer = "";
    let wake: (() => void) | null = null;
    const socket = await Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        data(_s, chunk) {
          buffer += chunk.toString();
          wake?.();
        },
      },
    });
    for (let i = 0; i < 20; i++) {
      socket.write(post("/upload", JSON.stringify(startReport(`ka-${i}`))));
      while (statuses(buffer).length <= i) await new Promise<void>((r) => (wake = r));
    }
    got.push(...statuses(buffer));
    socket.end();
    expect(got).toEqual(Array(20).fill(201));
    expect(count(t, "ka-%")).toBe(20);
  });
});

describe("writer: writes of aborted requests", () => {
  const op = (id: string): WriteOp => ({
    kind: "reject",
    at: 1,
    rejection: {
      endpoint: "upload",
      reason: "invalid_json",
      field: null,
      message: id,
      randomId: null,
      body: new Uint8Array(),
    },
  });

  test("aborted before submit or while queued: dropped, never committed; after its batch formed: committed", async () => {
    const committed: string[] = [];
    const writer = createWriter((ops) => {
      committed.push(...ops.map((o) => (o.kind === "reject" ? o.rejection.message : "?")));
      return ops.map(() => ({ kind: "rejected" }) as unknown as WriteResult);
    }, 100);
    const early = new AbortController();
    early.abort();
    await expect(writer.submit(op("early"), early.signal)).rejects.toBeInstanceOf(RequestAbortedError);

    const queued = new AbortController();
    const kept = writer.submit(op("kept"), new AbortController().signal);
    const dropped = writer.submit(op("dropped"), queued.signal);
    const plain = writer.submit(op("plain"));
    queued.abort();
    await expect(dropped).rejects.toBeInstanceOf(RequestAbortedError);
    await Promise.all([kept, plain]);
    expect(committed).toEqual(["kept", "plain"]);

    // Once the batch is formed, an abort changes nothing: the write is committed as submitted.
    let release: () => void = () => {};
    const slow = createWriter(async (ops) => {
      await new Promise<void>((r) => (release = r));
      committed.push(...ops.map((o) => (o.kind === "reject" ? o.rejection.message : "?")));
      return ops.map(() => ({ kind: "rejected" }) as unknown as WriteResult);
    }, 100);
    const late = new AbortController();
    const inFlight = slow.submit(op("in-flight"), late.signal);
    await Bun.sleep(5);
    late.abort();
    release();
    await inFlight;
    expect(committed).toEqual(["kept", "plain", "in-flight"]);
    expect(writer.stats.dropped).toBe(2);
    expect(slow.stats.dropped).toBe(0);
  });

  test("a batch made only of dropped writes commits nothing, and drain still resolves", async () => {
    let commits = 0;
    const writer = createWriter(
      (ops) => (commits++, ops.map(() => ({ kind: "rejected" }) as unknown as WriteResult)),
      100,
    );
    const controllers = Array.from({ length: 10 }, () => new AbortController());
    const all = controllers.map((c, i) => writer.submit(op(`x${i}`), c.signal).catch((e) => e));
    for (const c of controllers) c.abort();
    expect((await Promise.all(all)).every((e) => e instanceof RequestAbortedError)).toBe(true);
    await writer.drain();
    expect(commits).toBe(0);
  });
});
