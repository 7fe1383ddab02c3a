// Builds the real executable once per test process and runs it as a child on a free port.
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { ROOT, testTmpRoot } from "./tmp.ts";

let built: Promise<string> | undefined;

/** Path of a freshly compiled binary (INSTALLSTATS_BIN overrides, to test a release build). */
export function compiledBinary(): Promise<string> {
  built ??= (async () => {
    if (process.env.INSTALLSTATS_BIN) return process.env.INSTALLSTATS_BIN;
    // Inside the run's temporary directory, removed when the run ends (helpers/tmp.ts).
    const dir = mkdtempSync(join(testTmpRoot(), "installstats-bin-"));
    const outfile = join(dir, "installstats");
    const proc = Bun.spawn(["bun", "scripts/build.ts", "--outfile", outfile], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
    });
    if ((await proc.exited) !== 0) throw new Error(`build failed: ${await new Response(proc.stderr).text()}`);
    return outfile;
  })();
  return built;
}

/** A TCP port free on 127.0.0.1 just now, for a server that cannot be told to take port 0. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

export interface RunningServer {
  url: string;
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** Everything the server wrote to stderr (its JSON log), read so far. */
  stderr(): string;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function startServer(
  bin: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<RunningServer> {
  const proc = Bun.spawn([bin, "serve", "--host", "127.0.0.1", "--port", "0", ...args], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", ...env },
  });
  let errText = "";
  void (async () => {
    for await (const chunk of proc.stderr) errText += new TextDecoder().decode(chunk);
  })();
  const reader = proc.stdout.getReader();
  let out = "";
  const deadline = Date.now() + 15_000;
  while (!/listening on (http:\/\/\S+)/.test(out)) {
    if (Date.now() > deadline) throw new Error(`server did not start: ${out} ${errText}`);
    const { value, done } = await reader.read();
    if (done) throw new Error(`server exited (${await proc.exited}): ${out} ${errText}`);
    out += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;
  return {
    url,
    proc,
    stderr: () => errText,
    async stop(signal = "SIGTERM") {
      proc.kill(signal);
      return proc.exited;
    },
  };
}

/** Runs scripts/client.sh and returns its stdout lines ("upload 201", ...). */
export async function client(url: string, args: string[], env: Record<string, string> = {}): Promise<string[]> {
  const proc = Bun.spawn(["bash", join(ROOT, "scripts/client.sh"), "--url", url, ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", ...env },
  });
  const out = await new Response(proc.stdout).text();
  const code = await proc.exited;
  if (code !== 0)
    throw new Error(`client.sh ${args.join(" ")} exited ${code}: ${await new Response(proc.stderr).text()}`);
  return out.trim().split("\n").filter(Boolean);
}

/** One report's fate as a client sees it. */
export interface Answer {
  id: string;
  /** 0: no answer within 5 s (curl -m 5, as the clients send). */
  status: number;
  retryAfter: string | null;
  /** When it was sent, and how long the answer took. */
  at: number;
  ms: number;
}

/** A v2 start report for `id` to the server, given up after 5 s as the clients do. */
export async function sendStart(node: RunningServer, id: string): Promise<Answer> {
  const body = JSON.stringify({
    payload_version: 2,
    random_id: id,
    execution_id: id,
    type: "lxc",
    nsapp: "jellyfin",
    status: "installing",
  });
  const at = Date.now();
  try {
    const res = await fetch(`${node.url}/telemetry`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
      signal: AbortSignal.timeout(5000),
    });
    await res.arrayBuffer();
    return { id, status: res.status, retryAfter: res.headers.get("retry-after"), at, ms: Date.now() - at };
  } catch {
    return { id, status: 0, retryAfter: null, at, ms: Date.now() - at };
  }
}
