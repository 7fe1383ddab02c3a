// scripts/client.sh: the installer-client emulator sends exactly what real clients send.
// A tiny capture server records every request raw; the script is run with Bun.spawn.
// Only 127.0.0.1 traffic.
import { afterAll, beforeAll, beforeEach, describe, expect, test, setDefaultTimeout } from "bun:test";
import { join } from "node:path";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

const SCRIPT = join(import.meta.dir, "../..", "scripts", "client.sh");

interface Captured {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

let captured: Captured[] = [];
// Status answered per path; tests may change it.
let codes: Record<string, number> = {};
const DEFAULT_CODES = { "/upload": 201, "/upload/updatestatus": 200 };

let server: ReturnType<typeof Bun.serve>;
let base = "";

beforeAll(async () => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      const bytes = new Uint8Array(await req.arrayBuffer());
      captured.push({
        method: req.method,
        path: url.pathname,
        headers: Object.fromEntries(req.headers.entries()),
        body: new TextDecoder().decode(bytes),
      });
      const status = codes[url.pathname] ?? 404;
      return Response.json({ ok: status < 300, status }, { status });
    },
  });
  base = `http://127.0.0.1:${server.port}`;
});

afterAll(async () => {
  server.stop(true);
});

beforeEach(async () => {
  captured = [];
  codes = { ...DEFAULT_CODES };
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the script with a clean environment (no NSAPP etc. leaking in from the caller). */
async function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const proc = Bun.spawn([SCRIPT, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", INSTALLSTATS_URL: base, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}

function only(path: string): Captured[] {
  return captured.filter((c) => c.path === path);
}

function startBody(): Record<string, unknown> {
  const starts = only("/upload");
  expect(starts).toHaveLength(1);
  return JSON.parse(starts[0]!.body) as Record<string, unknown>;
}

const ID = "3f1c2a9e-5b7d-4c8e-9a0b-1d2e3f4a5b6c";

describe("start", () => {
  test("container client: the real layout, with disableip6, POST + JSON content type", async () => {
    const r = await run(["--id", ID, "start"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("upload 201\n");
    expect(captured).toHaveLength(1);
    const c = captured[0]!;
    expect(c.method).toBe("POST");
    expect(c.path).toBe("/upload");
    expect(c.headers["content-type"]).toBe("application/json");
    expect(c.headers["user-agent"]).toStartWith("curl/");
    // Byte for byte what post_to_api sends (heredoc layout, "type":"lxc" without a space).
    expect(c.body).toBe(
      [
        "{",
        '    "ct_type": 1,',
        '    "type":"lxc",',
        '    "disk_size": 8,',
        '    "core_count": 1,',
        '    "ram_size": 512,',
        '    "os_type": "debian",',
        '    "os_version": "12",',
        '    "disableip6": "no",',
        '    "nsapp": "debian",',
        '    "method": "default",',
        '    "pve_version": "8.2.2",',
        '    "status": "installing",',
        `    "random_id": "${ID}"`,
        "}",
      ].join("\n"),
    );
  });

  test("options and env fallbacks fill the fields", async () => {
    const r = await run(
      ["--id", ID, "--app", "jellyfin", "--cores", "4", "--os-version", "13", "--pve", "9.0.3", "start"],
      { METHOD: "advanced", var_os: "ubuntu", DISK_SIZE: "16", RAM_SIZE: "2048", CT_TYPE: "0", DISABLEIP6: "yes" },
    );
    expect(r.code).toBe(0);
    expect(startBody()).toEqual({
      ct_type: 0,
      type: "lxc",
      disk_size: 16,
      core_count: 4,
      ram_size: 2048,
      os_type: "ubuntu",
      os_version: "13",
      disableip6: "yes",
      nsapp: "jellyfin",
      method: "advanced",
      pve_version: "9.0.3",
      status: "installing",
      random_id: ID,
    });
  });

  test("legacy container revision does not send disableip6", async () => {
    await run(["--legacy", "--id", ID, "start"]);
    const body = startBody();
    expect(body).not.toHaveProperty("disableip6");
    expect(body.type).toBe("lxc");
    expect(body.ct_type).toBe(1);
    expect(only("/upload")[0]!.body).not.toContain("disableip6");
  });

  test('VM client: type vm, ct_type 2 (env CT_TYPE ignored), disableip6 "", G stripped', async () => {
    await run(["--vm", "--id", ID, "--disk", "32G", "start"], { CT_TYPE: "1", DISABLEIP6: "yes" });
    const body = startBody();
    expect(body.type).toBe("vm");
    expect(body.ct_type).toBe(2);
    expect(body.disableip6).toBe("");
    expect(body.disk_size).toBe(32);
  });

  test('container client sends "32G" unquoted: broken JSON, as in the wild', async () => {
    await run(["--id", ID, "--disk", "32G", "start"]);
    const raw = only("/upload")[0]!.body;
    expect(raw).toContain('    "disk_size": 32G,\n');
    expect(() => JSON.parse(raw)).toThrow();
  });

  test('empty number goes out as "disk_size": ,', async () => {
    await run(["--id", ID, "start"], { DISK_SIZE: "" });
    expect(only("/upload")[0]!.body).toContain('    "disk_size": ,\n');
  });

  test("--host-version sends host_version instead of pve_version", async () => {
    await run(["--host-version", "--pve", "8.4.1", "--id", ID, "start"]);
    const body = startBody();
    expect(body.host_version).toBe("8.4.1");
    expect(body).not.toHaveProperty("pve_version");
  });

  test('unknown host version is sent as the literal "not found"', async () => {
    await run(["--pve", "", "--id", ID, "start"]);
    expect(startBody().pve_version).toBe("not found");
    captured = [];
    await run(["--id", ID, "start"], { PVEVERSION: "" });
    expect(startBody().pve_version).toBe("not found");
  });

  test("random_id defaults to a fresh UUID, RANDOM_UUID env is used when set", async () => {
    await run(["start"]);
    await run(["start"]);
    const ids = only("/upload").map((c) => (JSON.parse(c.body) as { random_id: string }).random_id);
    expect(ids[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(ids[0]).not.toBe(ids[1]);
    captured = [];
    await run(["start"], { RANDOM_UUID: ID });
    expect(startBody().random_id).toBe(ID);
  });

  test("an empty random_id skips the start report, as the real client", async () => {
    const r = await run(["--id", "", "start"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect(captured).toHaveLength(0);
  });
});

describe("update", () => {
  test("defaults: failed / No error message", async () => {
    const r = await run(["--id", ID, "update"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("updatestatus 200\n");
    const ups = only("/upload/updatestatus");
    expect(ups).toHaveLength(1);
    expect(ups[0]!.method).toBe("POST");
    expect(ups[0]!.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(ups[0]!.body)).toEqual({ status: "failed", error: "No error message", random_id: ID });
  });

  test("explicit status and error", async () => {
    await run(["--id", ID, "update", "done", "none"]);
    expect(JSON.parse(only("/upload/updatestatus")[0]!.body)).toEqual({ status: "done", error: "none", random_id: ID });
  });

  test('an error with " and a newline arrives UNESCAPED (broken JSON)', async () => {
    const error = 'apt-get install -y "foo"\nE: Unable to locate package foo\tx\\y';
    await run(["--id", ID, "update", "failed", error]);
    const raw = only("/upload/updatestatus")[0]!.body;
    expect(raw).toBe(`{\n    "status": "failed",\n    "error": "${error}",\n    "random_id": "${ID}"\n}`);
    expect(() => JSON.parse(raw)).toThrow();
  });

  test('an empty random_id is still sent on update ("random_id": "")', async () => {
    await run(["--id", "", "update", "done", "none"]);
    expect(JSON.parse(only("/upload/updatestatus")[0]!.body)).toEqual({ status: "done", error: "none", random_id: "" });
  });
});

describe("opt-out", () => {
  test("DIAGNOSTICS=no sends nothing and prints nothing", async () => {
    for (const args of [["start"], ["update", "done"], ["install"], ["--vm", "install", "failed", "x"]]) {
      const r = await run(args, { DIAGNOSTICS: "no" });
      expect(r.code).toBe(0);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe("");
    }
    const v = await run(["-v", "install"], { DIAGNOSTICS: "no" });
    expect(v.stdout).toBe("");
    expect(v.stderr).toContain("DIAGNOSTICS=no");
    expect(captured).toHaveLength(0);
  });

  test("DIAGNOSTICS=yes sends as usual", async () => {
    const r = await run(["--id", ID, "start"], { DIAGNOSTICS: "yes" });
    expect(r.stdout).toBe("upload 201\n");
    expect(captured).toHaveLength(1);
  });
});

describe("install", () => {
  test("one start, then exactly one update: done / none by default", async () => {
    const r = await run(["--id", ID, "install"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("upload 201\nupdatestatus 200\n");
    expect(captured.map((c) => c.path)).toEqual(["/upload", "/upload/updatestatus"]);
    expect(JSON.parse(captured[1]!.body)).toEqual({ status: "done", error: "none", random_id: ID });
  });

  test("failed run: exactly one update even though the exit handler reports again", async () => {
    const r = await run(["-v", "--vm", "--id", ID, "install", "failed", "exit code 100"]);
    expect(r.code).toBe(0);
    expect(only("/upload")).toHaveLength(1);
    const ups = only("/upload/updatestatus");
    expect(ups).toHaveLength(1);
    expect(JSON.parse(ups[0]!.body)).toEqual({ status: "failed", error: "exit code 100", random_id: ID });
    // the guard is what stopped the second report
    expect(r.stderr).toContain("POST_UPDATE_DONE");
  });

  test("failed without an error text uses No error message", async () => {
    await run(["--id", ID, "install", "failed"]);
    expect(JSON.parse(only("/upload/updatestatus")[0]!.body).error).toBe("No error message");
  });

  test("SIGTERM during --sleep reports failed TERMINATED once; the final update is swallowed", async () => {
    const proc = Bun.spawn([SCRIPT, "--id", ID, "--sleep", "20", "install"], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", INSTALLSTATS_URL: base },
      stdout: "pipe",
      stderr: "pipe",
    });
    const t0 = Date.now();
    while (only("/upload").length === 0 && Date.now() - t0 < 10_000) await Bun.sleep(20);
    expect(only("/upload")).toHaveLength(1);
    await Bun.sleep(100); // let the script reach its sleep
    proc.kill("SIGTERM");
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(code).toBe(0);
    expect(stdout).toBe("upload 201\nupdatestatus 200\n");
    const ups = only("/upload/updatestatus");
    expect(ups).toHaveLength(1);
    expect(JSON.parse(ups[0]!.body)).toEqual({ status: "failed", error: "TERMINATED", random_id: ID });
  });

  test("output lines carry the codes the server gave; exit 0 whatever the code", async () => {
    codes = { "/upload": 200, "/upload/updatestatus": 409 };
    const r = await run(["--id", ID, "install"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("upload 200\nupdatestatus 409\n");
    codes = { "/upload": 422, "/upload/updatestatus": 202 };
    const r2 = await run(["--id", ID, "install"]);
    expect(r2.stdout).toBe("upload 422\nupdatestatus 202\n");
  });

  test("--url with a trailing slash and -v print the JSON on stderr", async () => {
    const r = await run(["--url", `${base}/`, "-v", "--id", ID, "install"], { INSTALLSTATS_URL: "http://127.0.0.1:1" });
    expect(r.stdout).toBe("upload 201\nupdatestatus 200\n");
    expect(captured.map((c) => c.path)).toEqual(["/upload", "/upload/updatestatus"]);
    expect(r.stderr).toContain('"status": "installing"');
    expect(r.stderr).toContain('"status": "done"');
  });
});

describe("unreachable server and usage", () => {
  test("unreachable: 000 lines, exit 1, the update is still attempted", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const port = closed.port;
    closed.stop(true);
    const r = await run(["--url", `http://127.0.0.1:${port}`, "--id", ID, "install", "failed", "x"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("upload 000\nupdatestatus 000\n");
    const s = await run(["--url", `http://127.0.0.1:${port}`, "start"]);
    expect(s.code).toBe(1);
    expect(s.stdout).toBe("upload 000\n");
  });

  test("usage errors exit 2 and send nothing; --help exits 0", async () => {
    for (const args of [
      [],
      ["bogus"],
      ["--nope", "start"],
      ["--url"],
      ["start", "extra"],
      ["update", "a", "b", "c"],
      ["install", "maybe"],
      ["install", "done", "oops"],
      ["--sleep", "soon", "install"],
      ["--vm", "--legacy", "start"],
    ]) {
      const r = await run(args);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
    }
    expect(captured).toHaveLength(0);
    const h = await run(["--help"]);
    expect(h.code).toBe(0);
    expect(h.stdout).toContain("scripts/client.sh [options] install");
    expect(h.stdout).toContain("--host-version");
  });
});
