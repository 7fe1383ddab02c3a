// End to end: the compiled binary, driven over HTTP by scripts/client.sh (the reference client's
// exact curl invocation), restarted on the same database, and read back.
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { client, compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { startReport } from "../helpers/app.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

let bin: string;
let dir: string;
let server: RunningServer;

beforeAll(async () => {
  bin = await compiledBinary();
  dir = tempDir();
});

// A stop commits, checkpoints and syncs: seconds when other processes flood the disk (5 s by default
// for a hook).
afterAll(async () => {
  if (server?.proc.exitCode === null) await server.stop();
}, 60_000);

const getJson = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe("compiled binary", () => {
  test("--version and --help work without a database", async () => {
    const version = Bun.spawnSync([bin, "--version"]);
    expect(version.exitCode).toBe(0);
    expect(version.stdout.toString().trim()).toMatch(/^\d+\.\d+\.\d+/);
    const help = Bun.spawnSync([bin, "serve", "--help"]);
    expect(help.exitCode).toBe(0);
    for (const flag of ["--port", "--host", "--db", "INSTALLSTATS_PORT", "INSTALLSTATS_DB"])
      expect(help.stdout.toString()).toContain(flag);
    const bad = Bun.spawnSync([bin, "serve", "--port", "http"]);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr.toString()).toContain("--port");
  });

  test("a full install lifecycle for containers and VMs survives a restart", async () => {
    // The database path comes from the environment here, to exercise INSTALLSTATS_* too.
    const db = join(dir, "lifecycle.db");
    server = await startServer(bin, [], { INSTALLSTATS_DB: db });
    const url = server.url;

    expect(await client(url, ["--id", "ct-ok", "--app", "jellyfin", "--disk", "32G", "install", "done"])).toEqual([
      "upload 201",
      "updatestatus 200",
    ]);
    expect(
      await client(url, ["--id", "ct-legacy", "--legacy", "--app", "pihole", "install", "failed", "exit code 100"]),
    ).toEqual(["upload 201", "updatestatus 200"]);
    expect(
      await client(url, [
        "--id",
        "vm-ok",
        "--vm",
        "--app",
        "haos-vm",
        "--disk",
        "32G",
        "--ram",
        "4096",
        "--cores",
        "2",
        "install",
        "done",
      ]),
    ).toEqual(["upload 201", "updatestatus 200"]);
    // A raw quote and a newline in the error text: the client sends broken JSON, as in the wild.
    expect(
      await client(url, [
        "--id",
        "vm-broken",
        "--vm",
        "--host-version",
        "--pve",
        "9.0.3",
        "install",
        "failed",
        'command "qm importdisk" failed\nat 10.1.2.3',
      ]),
    ).toEqual(["upload 201", "updatestatus 200"]);
    // Status update before its start report: held, then applied.
    expect(await client(url, ["--id", "late-start", "update", "done", "none"])).toEqual(["updatestatus 202"]);
    expect(await client(url, ["--id", "late-start", "start"])).toEqual(["upload 201"]);
    // Once per run: a second final status is refused, the record keeps the first.
    expect(await client(url, ["--id", "ct-ok", "update", "failed", "again"])).toEqual(["updatestatus 409"]);
    // Opted out: nothing is sent.
    expect(await client(url, ["--id", "opted-out", "install", "done"], { DIAGNOSTICS: "no" })).toEqual([]);
    // Unknown pve version: the literal "not found".
    expect(await client(url, ["--id", "no-pve", "--pve", "", "start"])).toEqual(["upload 201"]);

    expect(await server.stop("SIGTERM")).toBe(0);
    server = await startServer(bin, ["--db", db]);

    const rec = async (id: string) => (await getJson(`${server.url}/api/installs/${id}`)).body;
    // The container client sends `"disk_size": 32G` unquoted: repaired, and converted.
    expect(await rec("ct-ok")).toMatchObject({
      type: "lxc",
      ct_type: 1,
      nsapp: "jellyfin",
      disk_size: 32,
      status: "done",
      outcome: "success",
      disableip6: "no",
      repaired: true,
    });
    expect((await rec("ct-ok")).duration_s).toBeNumber();
    expect(await rec("ct-legacy")).toMatchObject({
      nsapp: "pihole",
      disableip6: null,
      status: "failed",
      outcome: "failed",
      error: "exit code 100",
      repaired: false,
    });
    // The VM client sends disableip6 "" (kept apart from the legacy client's absent field).
    expect(await rec("vm-ok")).toMatchObject({
      type: "vm",
      ct_type: 2,
      disk_size: 32,
      ram_size: 4096,
      core_count: 2,
      disableip6: "",
      outcome: "success",
    });
    expect(await rec("vm-broken")).toMatchObject({
      type: "vm",
      pve_version: "9.0.3",
      outcome: "failed",
      error: 'command "qm importdisk" failed\nat <ipv4>',
      repaired: true,
    });
    expect(await rec("late-start")).toMatchObject({ status: "done", outcome: "success", duration_s: null });
    expect(await rec("no-pve")).toMatchObject({ pve_version: "not found", outcome: "in_progress" });
    expect((await getJson(`${server.url}/api/installs/opted-out`)).status).toBe(404);

    // Privacy: the clients' address (127.0.0.1) is stored nowhere: not in the database, not in the WAL.
    for (const file of [db, `${db}-wal`]) {
      const bytes = Buffer.from(
        await Bun.file(file)
          .arrayBuffer()
          .catch(() => new ArrayBuffer(0)),
      );
      expect(bytes.includes("127.0.0.1")).toBe(false);
    }
  });

  test("the checkpoint thread copies the WAL into the database file while serving", async () => {
    const db = join(dir, "checkpoints.db");
    const running = await startServer(bin, ["--db", db]);
    try {
      const before = Bun.file(db).size;
      const posts = Array.from({ length: 300 }, (_, i) =>
        fetch(`${running.url}/upload`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(startReport(`ckpt-${i}`)),
        }),
      );
      expect((await Promise.all(posts)).every((r) => r.status === 201)).toBe(true);
      // The serving connection has automatic checkpoints off: only the thread moves pages into the file.
      const deadline = Date.now() + 5_000;
      while (Bun.file(db).size <= before && Date.now() < deadline) await Bun.sleep(50);
      expect(Bun.file(db).size).toBeGreaterThan(before);
      expect(running.stderr()).not.toMatch(/checkpoint failed|checkpoint thread died/);
    } finally {
      expect(await running.stop("SIGTERM")).toBe(0);
    }
  });

  test("serves its OpenAPI spec and docs page with every asset embedded", async () => {
    const spec = await getJson(`${server.url}/openapi/json`);
    expect(spec.status).toBe(200);
    const paths = Object.keys(spec.body.paths as object);
    for (const p of ["/upload", "/upload/updatestatus", "/api/installs/{random_id}", "/healthz"])
      expect(paths).toContain(p);
    const page = await (await fetch(`${server.url}/openapi`)).text();
    expect(page).not.toMatch(/https?:\/\//);
    const src = /src="([^"]*scalar[^"]*)"/.exec(page)?.[1];
    expect(src).toBeDefined();
    const js = await fetch(new URL(src!, server.url));
    expect(js.status).toBe(200);
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000);
  });

  test("a second server on a taken port exits with a clear error instead of sharing the port", async () => {
    const first = await startServer(bin, ["--db", join(dir, "port-first.db")]);
    try {
      const port = new URL(first.url).port;
      const second = Bun.spawnSync(
        [bin, "serve", "--host", "127.0.0.1", "--port", port, "--db", join(dir, "port-second.db")],
        { timeout: 15_000 },
      );
      expect(second.exitCode).toBe(4);
      expect(second.stderr.toString()).toStartWith(
        `installstats: cannot listen on 127.0.0.1:${port}: the port is in use`,
      );
      expect(second.stderr.toString().trim().split("\n")).toHaveLength(1);
      // It made its database only to fail: nothing of it is left behind.
      expect(readdirSync(dir).filter((f) => f.startsWith("port-second"))).toEqual([]);
      // Every report still reaches the first server's database.
      const posts = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          fetch(`${first.url}/upload`, { method: "POST", body: JSON.stringify(startReport(`port-${i}`)) }),
        ),
      );
      expect(posts.every((r) => r.status === 201)).toBe(true);
    } finally {
      expect(await first.stop("SIGTERM")).toBe(0);
    }
  });

  test("refuses a database file that is not its own, without touching it", async () => {
    const foreign = join(dir, "foreign.db");
    const { Database } = await import("bun:sqlite");
    const other = new Database(foreign);
    other.run("CREATE TABLE notes (body TEXT)");
    other.close();
    const before = await Bun.file(foreign).bytes();
    const run = Bun.spawnSync([bin, "migrate", "--db", foreign]);
    expect(run.exitCode).toBe(3);
    expect(run.stderr.toString()).toContain("another application");
    expect(await Bun.file(foreign).bytes()).toEqual(before);
  });
});

describe("operations in the compiled binary", () => {
  test("scheduled backups keep the newest N; an admin backup over HTTP needs the token", async () => {
    const { readdirSync } = await import("node:fs");
    const db = join(dir, "ops.db");
    const backups = join(dir, "backups");
    const ops = await startServer(
      bin,
      ["--db", db, "--backup-dir", backups, "--backup-every", "1s", "--backup-keep", "2"],
      { INSTALLSTATS_ADMIN_TOKEN: "adm1n" },
    );
    try {
      expect(await client(ops.url, ["--id", "ops-1", "install", "done"])).toEqual(["upload 201", "updatestatus 200"]);
      await Bun.sleep(3500);
      const files = readdirSync(backups).filter((f) => f.endsWith(".db"));
      expect(files.length).toBe(2);
      expect(ops.stderr()).toContain('"job":"backup"');
      expect((await fetch(`${ops.url}/api/admin/backup`, { method: "POST" })).status).toBe(401);
      const res = await fetch(`${ops.url}/api/admin/backup`, {
        method: "POST",
        headers: { authorization: "Bearer adm1n" },
      });
      expect(res.status).toBe(200);
      const made = (await res.json()) as { path: string; bytes: number };
      expect(made.bytes).toBeGreaterThan(0);
      // The backup is a working database holding what was acknowledged.
      const { Database } = await import("bun:sqlite");
      const copy = new Database(made.path, { readonly: true });
      expect(copy.query("SELECT status FROM executions WHERE random_id = 'ops-1'").get()).toEqual({ status: "done" });
      copy.close();
    } finally {
      expect(await ops.stop()).toBe(0);
    }
  });
});
