// What the packaging scripts (image.ts, deb.ts, release.ts) share: the repository, its version,
// and the binary to package (given, or dist/installstats built now).
import { readFileSync } from "node:fs";
import { join } from "node:path";

export const ROOT = new URL("..", import.meta.url).pathname;

export const packageVersion = (): string =>
  (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

/** `given`, or dist/installstats compiled now for this machine (exits with the build's failure). */
export function binaryToPackage(given: string | undefined): string {
  if (given) return given;
  const binary = join(ROOT, "dist/installstats");
  const b = Bun.spawnSync(["bun", join(ROOT, "scripts/build.ts"), "--outfile", binary], {
    stdout: "inherit",
    stderr: "inherit",
  });
  if (b.exitCode !== 0) process.exit(1);
  return binary;
}
