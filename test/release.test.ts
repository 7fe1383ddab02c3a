// scripts/release.ts: a versioned, stamped, checksummed binary. Only this machine's platform is
// built here (cross-compiling downloads another runtime the first time, which CI may not allow);
// the script builds linux-x64 and linux-arm64 by default.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, tempDir } from "./helpers/binary.ts";

setDefaultTimeout(120_000);

const version = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const host = process.platform === "linux" && (process.arch === "x64" || process.arch === "arm64") ? `linux-${process.arch}` : null;

const release = (args: string[]) => {
  const r = Bun.spawnSync(["bun", "scripts/release.ts", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};

describe("scripts/release.ts", () => {
  test.skipIf(host === null)("builds a binary named with the version, stamped with the commit, listed in SHA256SUMS", async () => {
    const out = tempDir("installstats-release-test-");
    writeFileSync(join(out, "notes.txt"), "not ours: stays");
    const r = release(["--targets", host!, "--out", out, "--allow-dirty"]);
    expect(r.err).not.toContain("release:");
    expect(r.code).toBe(0);
    const name = `installstats-${version}-${host}`;
    expect(readdirSync(out).sort()).toEqual(["SHA256SUMS", name, "notes.txt"].sort());

    const sums = readFileSync(join(out, "SHA256SUMS"), "utf8");
    const hasher = new Bun.CryptoHasher("sha256");
    hasher.update(await Bun.file(join(out, name)).arrayBuffer());
    expect(sums).toBe(`${hasher.digest("hex")}  ${name}\n`);

    const commit = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: ROOT }).stdout.toString().trim();
    const printed = Bun.spawnSync([join(out, name), "--version"]).stdout.toString().trim();
    expect(printed).toMatch(new RegExp(`^${version.replaceAll(".", "\\.")} \\(${commit}(-dirty)? \\d{4}-\\d{2}-\\d{2}\\)$`));
  });

  test("refuses an unknown target", () => {
    const r = release(["--targets", "windows-x64", "--out", tempDir()]);
    expect(r.code).toBe(2);
    expect(r.err).toBe("release: unknown target windows-x64; one of linux-x64, linux-arm64\n");
  });

  test("CHANGELOG.md has a section for the version being released", () => {
    expect(readFileSync(join(ROOT, "CHANGELOG.md"), "utf8")).toMatch(new RegExp(`^## \\[?${version.replaceAll(".", "\\.")}\\b`, "m"));
  });
});
