// scripts/release.ts: a versioned, stamped binary, its Debian package and the container image as an
// OCI archive, all in SHA256SUMS. Only this machine's platform is built here (cross-compiling
// downloads another runtime the first time, which CI may not allow); the script builds linux-x64
// and linux-arm64 by default.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, tempDir } from "../helpers/tmp.ts";

setDefaultTimeout(120_000);

const version = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
const host =
  process.platform === "linux" && (process.arch === "x64" || process.arch === "arm64") ? `linux-${process.arch}` : null;

const release = (args: string[]) => {
  const r = Bun.spawnSync(["bun", "scripts/release.ts", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};

describe("scripts/release.ts", () => {
  test.skipIf(host === null)(
    "builds a binary named with the version, stamped with the commit, its .deb and image, listed in SHA256SUMS",
    async () => {
      const out = tempDir("installstats-release-test-");
      writeFileSync(join(out, "notes.txt"), "not ours: stays");
      // An earlier run's file of the same kind is replaced.
      writeFileSync(join(out, `installstats-${version}-${host}`), "stale");
      const podman = Bun.which("podman") !== null && Bun.which("runc") !== null;
      const tag = `localhost/installstats-release-test-${process.pid}:test`;
      const r = release([
        "--targets",
        host!,
        "--out",
        out,
        "--allow-dirty",
        ...(podman ? ["--image-tag", tag] : ["--no-image"]),
      ]);
      expect(r.err).not.toContain("release:");
      expect(r.code).toBe(0);
      const arch = host === "linux-x64" ? "amd64" : "arm64";
      const name = `installstats-${version}-${host}`;
      const files = [
        name,
        `installstats_${version}_${arch}.deb`,
        ...(podman ? [`installstats-${version}-oci-${arch}.tar`] : []),
      ];
      expect(readdirSync(out).sort()).toEqual(["SHA256SUMS", "notes.txt", ...files].sort());

      // SHA256SUMS lists every file, in sha256sum's format.
      const sums = readFileSync(join(out, "SHA256SUMS"), "utf8");
      expect(
        sums
          .trim()
          .split("\n")
          .map((l) => l.split("  ")[1]),
      ).toEqual(files);
      const check = Bun.spawnSync(["sha256sum", "-c", "SHA256SUMS"], { cwd: out, stdout: "pipe" });
      expect(check.exitCode).toBe(0);
      expect(check.stdout.toString()).toBe(files.map((f) => `${f}: OK\n`).join(""));
      const hasher = new Bun.CryptoHasher("sha256");
      hasher.update(await Bun.file(join(out, name)).arrayBuffer());
      expect(sums).toStartWith(`${hasher.digest("hex")}  ${name}\n`);

      // The package holds that binary; the archive is an OCI image, not left in podman's storage.
      const info = Bun.spawnSync(["dpkg-deb", "-f", join(out, files[1]!), "Package", "Version", "Architecture"], {
        stdout: "pipe",
      }).stdout.toString();
      expect(info).toBe(`Package: installstats\nVersion: ${version}\nArchitecture: ${arch}\n`);
      if (podman) {
        const index = Bun.spawnSync(["tar", "-xOf", join(out, files[2]!), "index.json"], {
          stdout: "pipe",
        }).stdout.toString();
        expect(JSON.parse(index).manifests[0].mediaType).toBe("application/vnd.oci.image.manifest.v1+json");
        expect(Bun.spawnSync(["podman", "image", "exists", tag]).exitCode).not.toBe(0);
      }

      const commit = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: ROOT }).stdout.toString().trim();
      const printed = Bun.spawnSync([join(out, name), "--version"])
        .stdout.toString()
        .trim();
      expect(printed).toMatch(
        new RegExp(`^${version.replaceAll(".", "\\.")} \\(${commit}(-dirty)? \\d{4}-\\d{2}-\\d{2}\\)$`),
      );
    },
  );

  test("refuses an unknown target", () => {
    const r = release(["--targets", "windows-x64", "--out", tempDir()]);
    expect(r.code).toBe(2);
    expect(r.err).toBe("release: unknown target windows-x64; one of linux-x64, linux-arm64\n");
  });

  test("CHANGELOG.md has a section for the version being released", () => {
    expect(readFileSync(join(ROOT, "CHANGELOG.md"), "utf8")).toMatch(
      new RegExp(`^## \\[?${version.replaceAll(".", "\\.")}\\b`, "m"),
    );
  });
});
