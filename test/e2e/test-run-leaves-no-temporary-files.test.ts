// The test suite cleans up after itself: a `bun test` run leaves nothing in the temporary
// directory, when its tests fail, and when it is killed with processes still running from there
// (test/helpers/tmp.ts). Each case runs a small test file in a child `bun test` with TMPDIR
// pointed at an empty directory, then looks at what is left.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(60_000);

const HELPERS = join(ROOT, "test/helpers/tmp.ts");

/** A test file of its own in a fresh directory, and an empty directory to serve as its TMPDIR. */
function fixture(body: string): { file: string; observed: string } {
  const file = join(tempDir("installstats-fixture-"), "child.test.ts");
  writeFileSync(
    file,
    `import { expect, test } from "bun:test";\nimport { tempDir } from ${JSON.stringify(HELPERS)};\n${body}\n`,
  );
  return { file, observed: tempDir("installstats-observed-") };
}

const runChild = (file: string, observed: string) =>
  Bun.spawn(["bun", "test", file], {
    cwd: ROOT,
    env: { ...process.env, TMPDIR: observed },
    stdout: "pipe",
    stderr: "pipe",
  });

async function emptyWithin(dir: string, ms: number): Promise<string[]> {
  const deadline = Date.now() + ms;
  let left = readdirSync(dir);
  while (left.length > 0 && Date.now() < deadline) {
    await Bun.sleep(50);
    left = readdirSync(dir);
  }
  return left;
}

describe("temporary files of a test run", () => {
  test("are gone when the run ends with failing tests", async () => {
    const { file, observed } = fixture(`
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
test("fails after writing", () => {
  writeFileSync(join(tempDir(), "data"), "x".repeat(100_000));
  writeFileSync(join(tmpdir(), "by-tmpdir"), "made with os.tmpdir(), as many test files do");
  expect(1).toBe(2);
});`);
    const child = runChild(file, observed);
    const [code, err] = await Promise.all([child.exited, new Response(child.stderr).text()]);
    expect(code).toBe(1);
    expect(err).toContain("(fail) fails after writing");
    // Gone when bun test returns, not some time later.
    expect(readdirSync(observed)).toEqual([]);
  });

  test("are gone when the run is killed, with the processes it started from there", async () => {
    const { file, observed } = fixture(`
import { copyFileSync } from "node:fs";
import { join } from "node:path";
test("hangs with a process running from its directory", async () => {
  const sleeper = join(tempDir(), "sleep");
  copyFileSync(Bun.which("sleep")!, sleeper);
  const p = Bun.spawn([sleeper, "300"], { stdout: "ignore", stderr: "ignore" });
  console.log("ready", p.pid);
  await Bun.sleep(300_000);
}, 400_000);`);
    const child = runChild(file, observed);
    let out = "";
    const reader = child.stdout.getReader();
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    while (!/ready (\d+)\n/.test(out)) {
      const { value, done } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
    clearTimeout(timer);
    const sleeper = Number(/ready (\d+)/.exec(out)?.[1]);
    expect(sleeper).toBeGreaterThan(0);
    expect(readdirSync(observed)).toHaveLength(1);
    child.kill("SIGKILL");
    await child.exited;
    expect(await emptyWithin(observed, 5_000)).toEqual([]);
    // The orphaned process is ended too, or it would write on into a deleted directory.
    // (A zombie counts as ended: whether it is reaped is up to the machine's init.)
    const running = () => {
      try {
        process.kill(sleeper, 0);
      } catch {
        return false;
      }
      try {
        return !/^State:\s+Z/m.test(readFileSync(`/proc/${sleeper}/status`, "utf8"));
      } catch {
        return false;
      }
    };
    expect(running()).toBe(false);
  });
});
