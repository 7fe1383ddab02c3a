// The container image (packaging/Containerfile, built by scripts/image.ts) with Debian's podman:
// built FROM scratch from the compiled binary, run as its non-root user, healthy by its own
// HEALTHCHECK, a report stored, the container removed and made again on the same volume, and the
// report still there. Everything made here is removed at the end.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary, freePort } from "../helpers/binary.ts";
import { IMAGE_UID, buildImage } from "../../scripts/image.ts";

setDefaultTimeout(180_000);

const podman = Bun.which("podman");
const runc = Bun.which("runc");
if (!podman || !runc)
  console.warn("container tests skipped: podman and runc are not installed (Debian: apt-get install podman runc)");

// Unique names: other runs may use podman on the same machine at the same time.
const id = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
const tag = `localhost/installstats-test-${id}:test`;
const volume = `installstats-test-${id}`;
const containers: string[] = [];

// Debian 12's podman here: crun fails (setrlimit, cgroups in hybrid mode), runc with cgroupfs works.
const pod = (...args: string[]) => {
  const r = Bun.spawnSync([podman!, "--runtime", runc!, "--cgroup-manager=cgroupfs", ...args], {
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode, out: r.stdout.toString().trim(), err: r.stderr.toString().trim() };
};

let port = 0;

async function runContainer(name: string): Promise<void> {
  containers.push(name);
  const r = pod(
    "run",
    "-d",
    "--name",
    name,
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=4096:4096",
    "-p",
    `127.0.0.1:${port}:8080`,
    "-v",
    `${volume}:/var/lib/installstats`,
    tag,
  );
  expect(r.code).toBe(0);
}

/** `podman healthcheck run` runs the image's HEALTHCHECK (installstats healthcheck) inside the container. */
async function untilHealthy(name: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  let last = "";
  while (Date.now() < deadline) {
    const r = pod("healthcheck", "run", name);
    if (r.code === 0) {
      expect(pod("inspect", name, "--format", "{{.State.Health.Status}}").out).toBe("healthy");
      return;
    }
    last = `${r.out} ${r.err}`;
    await Bun.sleep(250);
  }
  throw new Error(`container ${name} not healthy within 30 s: ${last}\n${pod("logs", name).err}`);
}

describe.skipIf(!podman || !runc)("container image", () => {
  beforeAll(async () => {
    buildImage({ binary: await compiledBinary(), tag, version: "test" });
    expect(pod("volume", "create", volume).code).toBe(0);
    port = await freePort();
  });

  afterAll(() => {
    for (const c of containers) pod("rm", "-f", "-t", "2", c);
    pod("volume", "rm", "-f", volume);
    pod("rmi", "-f", tag);
  });

  test("holds the binary, its libraries and the loader only; runs as a non-root user with a health check", async () => {
    const config = JSON.parse(pod("image", "inspect", tag, "--format", "{{json .Config}}").out) as {
      User: string;
      Entrypoint: string[];
      Volumes: Record<string, unknown>;
    };
    const health = JSON.parse(pod("image", "inspect", tag, "--format", "{{json .HealthCheck}}").out) as {
      Test: string[];
    };
    expect(config.User).toBe(`${IMAGE_UID}:${IMAGE_UID}`);
    expect(health.Test).toEqual(["CMD", "/usr/bin/installstats", "healthcheck"]);
    expect(config.Entrypoint).toEqual(["/usr/bin/installstats"]);
    expect(Object.keys(config.Volumes)).toEqual(["/var/lib/installstats"]);
    // No shell to run anything else with.
    expect(pod("run", "--rm", "--entrypoint", "/bin/sh", tag, "-c", "true").code).not.toBe(0);
    // The binary and the files it needs: its size and a few kilobytes more, nothing else.
    const size = Number(pod("image", "inspect", tag, "--format", "{{.Size}}").out);
    expect(size).toBeGreaterThan(statSync(await compiledBinary()).size);
    expect(size).toBeLessThan(statSync(await compiledBinary()).size + 8 * 1024 * 1024);
  });

  test("runs healthy, stores a report, and keeps it when the container is made again on the same volume", async () => {
    const first = `installstats-test-${id}-a`;
    await runContainer(first);
    await untilHealthy(first);
    // The server runs as the image's user, not root.
    expect(
      pod("top", first, "huser")
        .out.split("\n")
        .slice(1)
        .map((l) => l.trim()),
    ).toEqual([String(IMAGE_UID)]);

    const report = {
      payload_version: 2,
      random_id: `container-${id}`,
      execution_id: `container-${id}`,
      type: "lxc",
      nsapp: "jellyfin",
      status: "installing",
    };
    const res = await fetch(`http://127.0.0.1:${port}/telemetry`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(report),
    });
    expect(res.status).toBe(201);
    const db = join(pod("volume", "inspect", volume, "--format", "{{.Mountpoint}}").out, "installstats.db");
    expect(statSync(db).uid).toBe(IMAGE_UID);

    // podman stop sends SIGTERM: the server commits and closes, exit code 0.
    expect(pod("stop", "-t", "20", first).code).toBe(0);
    expect(pod("inspect", first, "--format", "{{.State.ExitCode}}").out).toBe("0");
    expect(pod("rm", first).code).toBe(0);

    const second = `installstats-test-${id}-b`;
    await runContainer(second);
    await untilHealthy(second);
    const back = await fetch(`http://127.0.0.1:${port}/api/installs/container-${id}`);
    expect(back.status).toBe(200);
    expect(((await back.json()) as { nsapp: string }).nsapp).toBe("jellyfin");
  });
});
