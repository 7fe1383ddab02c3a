// Builds a release into dist/release/: per platform (Proxmox hosts are linux-x64; small ARM boards
// linux-arm64) the binary installstats-<version>-linux-<arch> and the Debian package
// installstats_<version>_<amd64|arm64>.deb, and for this machine's platform the container image
// as an OCI archive, installstats-<version>-oci-<arch>.tar; every file listed with its SHA-256 in
// SHA256SUMS. Binaries are stamped with the commit and date (`--version` prints
// "0.1.0 (3f2a9c1d4e5b 2026-11-24)"); this machine's binary is run before anything is packaged.
//
// Usage: bun run release [--targets linux-x64,linux-arm64] [--out dist/release] [--allow-dirty] [--no-image]
//        (bun run release -- --targets linux-x64: bun passes what follows -- to the script)
//
// Refuses a tree with uncommitted changes (the stamp would not name what was built) unless
// --allow-dirty (then the stamp says "-dirty"), and a version without its CHANGELOG.md section.
// Cross-compiling downloads the other platform's Bun runtime once (bun caches it).
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { parseArgs } from "node:util";
import { buildDeb, type DebArch } from "./deb.ts";
import { ROOT, packageVersion } from "./dist.ts";
import { buildImage } from "./image.ts";

const TARGETS = ["linux-x64", "linux-arm64"] as const;
type Target = (typeof TARGETS)[number];
const DEB_ARCH: Record<Target, DebArch> = { "linux-x64": "amd64", "linux-arm64": "arm64" };

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  // --image-tag: the name the image is built under before it is saved (and removed), for tests.
  options: {
    targets: { type: "string" },
    out: { type: "string" },
    "allow-dirty": { type: "boolean" },
    "no-image": { type: "boolean" },
    "image-tag": { type: "string" },
  },
});

function fail(message: string): never {
  console.error(`release: ${message}`);
  process.exit(2);
}

const git = (...args: string[]): string => {
  const r = Bun.spawnSync(["git", ...args], { cwd: ROOT, stderr: "pipe" });
  if (r.exitCode !== 0) fail(`git ${args.join(" ")} failed: ${r.stderr.toString().trim()}`);
  return r.stdout.toString().trim();
};

const targets = (values.targets ?? TARGETS.join(",")).split(",").map((t) => t.trim());
for (const t of targets)
  if (!(TARGETS as readonly string[]).includes(t)) fail(`unknown target ${t}; one of ${TARGETS.join(", ")}`);
const out = values.out ?? join(ROOT, "dist/release");

const version = packageVersion();
const changelog = readFileSync(join(ROOT, "CHANGELOG.md"), "utf8");
if (!new RegExp(`^## \\[?${version.replaceAll(".", "\\.")}\\b`, "m").test(changelog))
  fail(`CHANGELOG.md has no section for ${version} ("## ${version}"); write it first`);

const dirty = git("status", "--porcelain") !== "";
if (dirty && !values["allow-dirty"])
  fail("the tree has uncommitted changes; commit them (or pass --allow-dirty for a build that says so)");
const stamp = `${git("rev-parse", "--short=12", "HEAD")}${dirty ? "-dirty" : ""} ${new Date().toISOString().slice(0, 10)}`;

const hostTarget: Target | null =
  process.platform === "linux" && (process.arch === "x64" || process.arch === "arm64") ? `linux-${process.arch}` : null;
// The image is made from this machine's binary: ldd must read it to find the libraries it links.
const imageTarget = values["no-image"] || !hostTarget || !targets.includes(hostTarget) ? null : hostTarget;
for (const [tool, pkg] of [
  ["dpkg-deb", "dpkg"],
  ["ldd", "libc-bin"],
  ...(imageTarget ? [["podman", "podman runc"]] : []),
] as const) {
  if (!Bun.which(tool))
    fail(
      `${tool} is not installed; install it (Debian: apt-get install ${pkg})${tool === "podman" ? ", or pass --no-image" : ""}`,
    );
}

// Only what an earlier release run wrote is replaced; anything else in the folder stays.
mkdirSync(out, { recursive: true });
const ours = (name: string) =>
  /^installstats-.*-(linux-(x64|arm64)|oci-(amd64|arm64)\.tar)$/.test(name) ||
  /^installstats_.*_(amd64|arm64)\.deb$/.test(name) ||
  name === "SHA256SUMS";
for (const name of readdirSync(out)) if (ours(name)) rmSync(join(out, name));

async function sha256(path: string): Promise<string> {
  const hasher = new Bun.CryptoHasher("sha256");
  for await (const chunk of Bun.file(path).stream()) hasher.update(chunk);
  return hasher.digest("hex");
}

/** The binary of this machine's platform is run: --version shows the stamp, and it migrates a new database. */
function smokeTest(binary: string): void {
  const v = Bun.spawnSync([binary, "--version"]);
  const printed = v.stdout.toString().trim();
  if (v.exitCode !== 0 || printed !== `${version} (${stamp})`)
    fail(`${basename(binary)} --version printed ${JSON.stringify(printed)}, expected "${version} (${stamp})"`);
  const dir = mkdtempSync(join(tmpdir(), "installstats-release-"));
  const m = Bun.spawnSync([binary, "migrate", "--db", join(dir, "smoke.db")], { stderr: "pipe" });
  // Removed before fail(): it ends the process, and a finally block would not run.
  rmSync(dir, { recursive: true, force: true });
  if (m.exitCode !== 0) fail(`${basename(binary)} migrate failed: ${m.stderr.toString().trim()}`);
}

const files: string[] = [];
for (const target of targets as Target[]) {
  const file = join(out, `installstats-${version}-${target}`);
  const build = Bun.spawnSync(
    ["bun", join(ROOT, "scripts/build.ts"), "--outfile", file, "--target", `bun-${target}`, "--stamp", stamp],
    {
      cwd: ROOT,
      stdout: "inherit",
      stderr: "inherit",
    },
  );
  if (build.exitCode !== 0 || !existsSync(file))
    fail(
      `building ${target} failed (cross-compiling needs bun's ${target} runtime: a network connection the first time)`,
    );
  if (target === hostTarget) smokeTest(file);
  files.push(file);
  try {
    files.push(buildDeb({ binary: file, version, arch: DEB_ARCH[target], out }));
    if (target === imageTarget) {
      const archive = join(out, `installstats-${version}-oci-${DEB_ARCH[target]}.tar`);
      const tag = values["image-tag"] ?? `localhost/installstats:${version}`;
      buildImage({ binary: file, tag, version, ociArchive: archive });
      // The archive is the release; `podman load -i` brings the image back under this name.
      Bun.spawnSync(["podman", "rmi", tag], { stdout: "ignore", stderr: "ignore" });
      files.push(archive);
    }
  } catch (e) {
    fail(`packaging ${target} failed: ${(e as Error).message}`);
  }
}
const sums: string[] = [];
for (const file of files) sums.push(`${await sha256(file)}  ${basename(file)}`);
// The format of sha256sum: check with `cd dist/release && sha256sum -c SHA256SUMS`.
writeFileSync(join(out, "SHA256SUMS"), `${sums.join("\n")}\n`);

console.log(`\ninstallstats ${version} (${stamp}) in ${out}:`);
for (const line of sums) {
  const name = line.split("  ")[1]!;
  console.log(`  ${name}  ${(statSync(join(out, name)).size / 1048576).toFixed(0)} MiB  sha256 ${line.slice(0, 16)}…`);
}
console.log(`  SHA256SUMS  (check: cd ${out} && sha256sum -c SHA256SUMS)`);
if (!hostTarget || !targets.includes(hostTarget))
  console.log("  (no binary for this machine's platform was built, so none was run)");
if (!imageTarget) console.log("  (no container image: it is made from this machine's platform's binary)");
