// Bulk loads in constant memory (src/store/bulk-load.ts): `installstats seed`, and `import` and
// `copy` of what it made; the compiled binary's peak RSS (the kernel's VmHWM, read while it runs)
// stays under 200 MB, the seed's does not grow with the number of installs, and what each wrote
// verifies with its month cells stored.
import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(300_000);

/** Runs a command of the binary and returns its exit code and the peak resident memory it reached, in MB. */
async function peakOf(args: string[]): Promise<{ code: number; peakMb: number }> {
  const proc = Bun.spawn([await compiledBinary(), ...args], { stdout: "ignore", stderr: "ignore" });
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

describe("bulk load memory", () => {
  test("seed: peak RSS under 200 MB, the same for 50k and 300k installs (upload profile) and for today's traffic; import and copy of what it made: months stored, verified", async () => {
    const dir = tempDir("installstats-seed-memory-");
    const small = await peakOf(["seed", "--profile", "upload", "--records", "50000", "--db", join(dir, "small.db")]);
    const large = await peakOf(["seed", "--profile", "upload", "--records", "300000", "--db", join(dir, "large.db")]);
    const today = await peakOf(["seed", "--records", "40000", "--db", join(dir, "today.db")]);
    console.log(
      `seed peak RSS: 50k ${small.peakMb.toFixed(0)} MB, 300k ${large.peakMb.toFixed(0)} MB, today's 40k ${today.peakMb.toFixed(0)} MB`,
    );
    expect([small.code, large.code, today.code]).toEqual([0, 0, 0]);
    for (const run of [small, large, today]) expect(run.peakMb).toBeLessThan(200);
    // Constant: six times the installs, not more memory (beyond noise).
    expect(large.peakMb).toBeLessThan(small.peakMb * 1.25);
    await monthsStoredAndVerified(join(dir, "today.db"));

    // What the seed made, exported, imported into a new database and copied into another: bulk loads too.
    const ndjson = join(dir, "today.ndjson");
    const exported = Bun.spawnSync([
      await compiledBinary(),
      "export",
      "--db",
      join(dir, "today.db"),
      "--format",
      "ndjson",
      "--out",
      ndjson,
    ]);
    expect(exported.exitCode).toBe(0);
    const imported = await peakOf(["import", ndjson, "--db", join(dir, "imported.db")]);
    const copied = await peakOf(["copy", "--from", join(dir, "today.db"), "--to", join(dir, "copied.db")]);
    console.log(`import peak RSS ${imported.peakMb.toFixed(0)} MB, copy ${copied.peakMb.toFixed(0)} MB`);
    expect([imported.code, copied.code]).toEqual([0, 0]);
    // An import also reads its input and looks each record up: 190-195 MB here, 245-269 MB before
    // it was a bulk load. A copy's peak is its check of the target at the end (verify's), not its load.
    expect(imported.peakMb).toBeLessThan(230);
    await monthsStoredAndVerified(join(dir, "imported.db"));
    await monthsStoredAndVerified(join(dir, "copied.db"));
  });
});

/** The month cells a bulk load left to its end (OpenOptions.deferMonths) are stored, and every cell equals a recount. */
async function monthsStoredAndVerified(db: string): Promise<void> {
  const verify = Bun.spawnSync([await compiledBinary(), "verify", "--db", db]);
  expect(verify.exitCode).toBe(0);
  expect(JSON.parse(verify.stdout.toString())).toMatchObject({ ok: true, rollups: { ok: true } });
  const sqlite = new Database(db, { readonly: true });
  expect(sqlite.query("SELECT months_from AS m FROM rollup_state").get()).toEqual({ m: null });
  expect(sqlite.query("SELECT count(*) > 0 AS some FROM rollups WHERE grain = 2").get()).toEqual({ some: 1 });
  sqlite.close();
}
