// `installstats seed` in constant memory: the compiled binary's peak RSS (the kernel's VmHWM,
// read while it runs) stays under 200 MB, and does not grow with the number of installs; what it
// wrote verifies.
import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(300_000);

/** Runs a seed and returns its exit code and the peak resident memory it reached, in MB. */
async function peakOfSeed(args: string[]): Promise<{ code: number; peakMb: number }> {
  const proc = Bun.spawn([await compiledBinary(), "seed", ...args], { stdout: "ignore", stderr: "ignore" });
  let peakKb = 0;
  while (proc.exitCode === null) {
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, "utf8"));
      if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
    } catch {
      // gone between the check and the read
    }
    await Bun.sleep(50);
  }
  return { code: await proc.exited, peakMb: peakKb / 1024 };
}

describe("seed memory", () => {
  test("peak RSS under 200 MB, the same for 50k and 300k installs (upload profile) and for today's traffic", async () => {
    const dir = tempDir("installstats-seed-memory-");
    const small = await peakOfSeed(["--profile", "upload", "--records", "50000", "--db", join(dir, "small.db")]);
    const large = await peakOfSeed(["--profile", "upload", "--records", "300000", "--db", join(dir, "large.db")]);
    const today = await peakOfSeed(["--records", "40000", "--db", join(dir, "today.db")]);
    console.log(
      `seed peak RSS: 50k ${small.peakMb.toFixed(0)} MB, 300k ${large.peakMb.toFixed(0)} MB, today's 40k ${today.peakMb.toFixed(0)} MB`,
    );
    expect([small.code, large.code, today.code]).toEqual([0, 0, 0]);
    for (const run of [small, large, today]) expect(run.peakMb).toBeLessThan(200);
    // Constant: six times the installs, not more memory (beyond noise).
    expect(large.peakMb).toBeLessThan(small.peakMb * 1.25);
    // The month cells it left to the end (OpenOptions.deferMonths) are stored and add up.
    const verify = Bun.spawnSync([await compiledBinary(), "verify", "--db", join(dir, "today.db")]);
    expect(verify.exitCode).toBe(0);
    expect(JSON.parse(verify.stdout.toString())).toMatchObject({ ok: true, rollups: { ok: true } });
    const sqlite = new Database(join(dir, "today.db"), { readonly: true });
    expect(sqlite.query("SELECT months_from AS m FROM rollup_state").get()).toEqual({ m: null });
    expect(sqlite.query("SELECT count(*) > 0 AS some FROM rollups WHERE grain = 2").get()).toEqual({ some: 1 });
    sqlite.close();
  });
});
