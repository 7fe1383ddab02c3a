// `installstats healthcheck`: what the container image's HEALTHCHECK runs (scratch has no curl).
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { loopbackOf } from "../../src/cli/healthcheck.ts";
import { compiledBinary, startServer } from "../helpers/binary.ts";
import { ROOT, tempDir } from "../helpers/tmp.ts";
import { join } from "node:path";

setDefaultTimeout(120_000);

// Spawned without blocking: the fake server below answers from this process.
const check = async (bin: string[], args: string[], env: Record<string, string> = {}) => {
  const p = Bun.spawn([...bin, "healthcheck", ...args], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
    env: { PATH: process.env.PATH ?? "", ...env },
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
};

describe("installstats healthcheck", () => {
  const fake = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => Response.json({ status: "degraded" }, { status: 503 }),
  });
  afterAll(() => fake.stop(true));

  test("a wildcard listen address is asked on loopback", () => {
    expect(loopbackOf("0.0.0.0")).toBe("127.0.0.1");
    expect(loopbackOf("::")).toBe("[::1]");
    expect(loopbackOf("10.0.0.5")).toBe("10.0.0.5");
    expect(loopbackOf("fd00::5")).toBe("[fd00::5]");
  });

  test("exit 0 when the compiled server answers 200, its port taken from INSTALLSTATS_PORT as in the image", async () => {
    const bin = await compiledBinary();
    const server = await startServer(bin, ["--db", join(tempDir(), "h.db")]);
    try {
      const port = new URL(server.url).port;
      const r = await check([bin], [], { INSTALLSTATS_PORT: port });
      expect(r).toEqual({ code: 0, out: `http://127.0.0.1:${port}/healthz: 200 ok\n`, err: "" });
    } finally {
      await server.stop();
    }
  });

  test("exit 1 for a degraded server and for none at all; bad options are usage errors", async () => {
    expect(await check(["bun", "src/main.ts"], ["--port", String(fake.port)])).toEqual({
      code: 1,
      out: `http://127.0.0.1:${fake.port}/healthz: 503 degraded\n`,
      err: "",
    });
    const none = await check(["bun", "src/main.ts"], ["--port", "1", "--host", "127.0.0.1"]);
    expect(none.code).toBe(1);
    expect(none.out).toStartWith("http://127.0.0.1:1/healthz: unreachable (");
    expect(await check(["bun", "src/main.ts"], ["--timeout", "soon"])).toMatchObject({
      code: 2,
      err: "installstats: --timeout must be a positive number of seconds, such as 3\n",
    });
  });
});
