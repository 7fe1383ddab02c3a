// Builds the container image from a compiled binary with podman, FROM scratch (packaging/Containerfile):
// the binary, exactly the libraries ldd names and the loader, a passwd entry for the service user.
// Nothing is pulled from a registry.
//
// Usage: bun scripts/image.ts [--binary dist/installstats] [--tag installstats:<version>] [--oci-archive file.tar]
// Without --binary it builds dist/installstats first. --oci-archive also saves the image as an OCI
// archive (podman load -i file.tar). Needs podman (Debian: apt-get install podman runc).
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { ROOT, binaryToPackage, packageVersion } from "./dist.ts";

/** The service user inside the image (no name clash with a host user matters: it is only a number). */
export const IMAGE_UID = 10001;

function run(cmd: string[], what: string): string {
  const r = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0)
    throw new Error(`${what} failed (${cmd.join(" ")}): ${r.stderr.toString().trim() || r.stdout.toString().trim()}`);
  return r.stdout.toString();
}

/** The shared libraries and the loader the binary needs, as absolute paths (ldd's output). */
export function linkedLibraries(binary: string): string[] {
  const out = run(["ldd", binary], "ldd");
  const paths = new Set<string>();
  for (const line of out.split("\n")) {
    // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"; vdso has no file.
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m) paths.add(m[1]!);
  }
  if (paths.size === 0)
    throw new Error(
      `ldd named no libraries for ${binary}: is it a dynamically linked Linux executable of this machine's platform?`,
    );
  return [...paths];
}

/** The build context packaging/Containerfile expects, in a new temporary directory. */
export function stageContext(binary: string): string {
  const ctx = mkdtempSync(join(process.env.TMPDIR ?? tmpdir(), "installstats-image-"));
  const rootfs = join(ctx, "rootfs");
  const put = (from: string, to: string, mode: number) => {
    const target = join(rootfs, to);
    mkdirSync(dirname(target), { recursive: true });
    // The file itself, under the name the binary asks for (the host's may be a symlink).
    copyFileSync(realpathSync(from), target);
    chmodSync(target, mode);
  };
  put(binary, "usr/bin/installstats", 0o755);
  for (const lib of linkedLibraries(binary)) put(lib, lib, 0o755);
  mkdirSync(join(rootfs, "etc"), { recursive: true });
  writeFileSync(
    join(rootfs, "etc/passwd"),
    `root:x:0:0:root:/root:/usr/sbin/nologin\ninstallstats:x:${IMAGE_UID}:${IMAGE_UID}:installstats:/var/lib/installstats:/usr/sbin/nologin\n`,
  );
  writeFileSync(join(rootfs, "etc/group"), `root:x:0:\ninstallstats:x:${IMAGE_UID}:\n`);
  mkdirSync(join(rootfs, "tmp"));
  chmodSync(join(rootfs, "tmp"), 0o1777);
  mkdirSync(join(ctx, "data"));
  copyFileSync(join(ROOT, "packaging/Containerfile"), join(ctx, "Containerfile"));
  return ctx;
}

/** Builds the image as `tag` (and saves it as an OCI archive when asked); returns the image id. */
export function buildImage(opts: { binary: string; tag: string; version: string; ociArchive?: string }): string {
  const ctx = stageContext(opts.binary);
  try {
    // --isolation chroot: podman's default (OCI runtime) isolation fails inside many VMs and CI runners.
    run(
      [
        "podman",
        "build",
        "--isolation",
        "chroot",
        "--format",
        "docker",
        "--pull=never",
        "--label",
        `org.opencontainers.image.version=${opts.version}`,
        "--label",
        "org.opencontainers.image.title=installstats",
        "-t",
        opts.tag,
        "-f",
        join(ctx, "Containerfile"),
        ctx,
      ],
      "podman build",
    );
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
  const id = run(["podman", "image", "inspect", "--format", "{{.Id}}", opts.tag], "podman image inspect").trim();
  if (opts.ociArchive) {
    rmSync(opts.ociArchive, { force: true });
    run(["podman", "save", "--format", "oci-archive", "-o", opts.ociArchive, opts.tag], "podman save");
  }
  return id;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: { binary: { type: "string" }, tag: { type: "string" }, "oci-archive": { type: "string" } },
  });
  const version = packageVersion();
  if (!Bun.which("podman")) {
    console.error("image: podman is not installed; install it (Debian: apt-get install podman runc)");
    process.exit(2);
  }
  const binary = binaryToPackage(values.binary);
  const tag = values.tag ?? `installstats:${version}`;
  try {
    const id = buildImage({ binary, tag, version, ociArchive: values["oci-archive"] });
    console.log(
      `built image ${tag} (${id.slice(0, 12)})${values["oci-archive"] ? `, saved to ${values["oci-archive"]}` : ""}`,
    );
  } catch (e) {
    console.error(`image: ${(e as Error).message}`);
    process.exit(1);
  }
}
