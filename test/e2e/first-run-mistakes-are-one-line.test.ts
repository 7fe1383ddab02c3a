// The first run, as a newcomer meets it, through the compiled binary: every start-up mistake is
// one line with the cause and the fix and a documented exit code (docs/operations.md#exit-codes), each
// command's --help shows its own options, seed and import say when they did nothing useful, a
// second server on one database is refused, and start-up prints addresses a person can open.
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  chmodSync,
  chownSync,
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  writeFileSync,
} from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { closest, parseCommandLine } from "../../src/cli/args.ts";
import { startupLines } from "../../src/cli/addresses.ts";
import { listenFailure } from "../../src/cli/serve.ts";
import { compiledBinary, startServer } from "../helpers/binary.ts";
import { tempDir, testTmpRoot } from "../helpers/tmp.ts";

// Starts processes: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

let bin: string;
let dir: string;

beforeAll(async () => {
  bin = await compiledBinary();
  dir = tempDir("installstats-first-run-");
});

const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" };

function run(args: string[], prefix: string[] = [], binary = bin) {
  const r = Bun.spawnSync([...prefix, binary, ...args], { env, timeout: 30_000, stdin: "ignore" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

/** Exactly one line on stderr, "installstats: ...": no stack, no source, no log lines. */
function oneLine(err: string): string {
  const lines = err.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toStartWith("installstats: ");
  return lines[0]!;
}

const ROOT_USER = process.getuid?.() === 0;
const SETPRIV = Bun.which("setpriv");
const NOBODY = 65534;
/** How to run as an unprivileged user: nobody via setpriv when the tests run as root, as we are otherwise; null when neither works. */
const UNPRIVILEGED: string[] | null = ROOT_USER
  ? SETPRIV
    ? [SETPRIV, `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"]
    : null
  : [];

/** The binary where an unprivileged user can run it: a hard link in a directory anyone may enter. */
function reachableBinary(): string {
  chmodSync(testTmpRoot(), 0o711);
  const open = join(dir, "bin");
  if (!existsSync(open)) {
    mkdirSync(open, { mode: 0o755 });
    chmodSync(dir, 0o711);
    linkSync(bin, join(open, "installstats"));
  }
  return join(open, "installstats");
}

/** A directory the unprivileged user owns (so only what the test takes away is missing). */
function ownDir(name: string): string {
  const d = join(dir, name);
  mkdirSync(d, { mode: 0o755 });
  if (ROOT_USER) chownSync(d, NOBODY, NOBODY);
  return d;
}

const unprivilegedPortStart = (): number => {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_unprivileged_port_start", "utf8"));
  } catch {
    return 1024;
  }
};

describe("start-up failures: one line, the cause and the fix", () => {
  test("a database in a missing directory names the directory and both fixes; nothing is created", () => {
    const missing = join(dir, "no-such-dir");
    for (const args of [
      ["serve", "--db", join(missing, "x.db"), "--port", "0"],
      ["migrate", "--db", join(missing, "x.db")],
      ["seed", "--records", "5", "--db", join(missing, "x.db")],
    ]) {
      const r = run(args);
      expect(r.code).toBe(3);
      const line = oneLine(r.err);
      expect(line).toContain(`directory ${missing} does not exist`);
      expect(line).toContain(`mkdir -p ${missing}`);
      expect(line).toContain("--db");
      expect(line).not.toContain("unable to open database file");
    }
    expect(existsSync(missing)).toBe(false);
  });

  test("--db with a scheme no engine speaks (mysql://) is one line naming the accepted ones, exit 2, on every command that opens it; nothing is created", () => {
    const cwd = join(dir, "unsupported-scheme");
    mkdirSync(cwd);
    const url = "mysql://installstats:hunter2@db-host/installstats";
    for (const args of [
      ["serve", "--db", url, "--port", "0"],
      ["verify", "--db", url],
      ["export", "--db", url],
      ["migrate", "--db", url],
      ["backup", "--db", url, "copy.db"],
      ["copy", "--from", "x.db", "--to", url],
    ]) {
      const r = Bun.spawnSync([bin, ...args], { env, cwd, timeout: 30_000, stdin: "ignore" });
      expect(r.exitCode, args.join(" ")).toBe(2);
      const line = oneLine(r.stderr.toString());
      expect(line).toContain(
        "mysql://installstats:***@db-host/installstats is not a database installstats can open (mysql:// is not supported)",
      );
      for (const accepted of ["SQLite file", ":memory:", "postgres://", "postgresql://"])
        expect(line).toContain(accepted);
      expect(line).not.toContain("unable to open database file");
      expect(line).not.toContain("hunter2");
    }
    expect(readdirSync(cwd)).toEqual([]);
  });

  test("--db naming a directory says so", () => {
    const r = run(["serve", "--db", dir, "--port", "0"]);
    expect(r.code).toBe(3);
    expect(oneLine(r.err)).toContain(`--db ${dir} is a directory`);
  });

  test.skipIf(UNPRIVILEGED === null)(
    "a directory or a database file the user may not write is a permission problem, named with the user and the path",
    () => {
      const b = reachableBinary();
      // The directory belongs to root (not writable for nobody): a new database cannot go there.
      const rootDir = join(dir, "root-owned");
      mkdirSync(rootDir, { mode: 0o755 });
      if (!ROOT_USER) chmodSync(rootDir, 0o555);
      const inRootDir = run(["serve", "--db", join(rootDir, "x.db"), "--port", "0"], UNPRIVILEGED!, b);
      expect(inRootDir.code).toBe(3);
      let line = oneLine(inRootDir.err);
      expect(line).toContain("permission denied");
      expect(line).toContain(`may not write in ${rootDir}`);
      expect(line).not.toContain("not a usable SQLite database");
      expect(readdirSync(rootDir)).toEqual([]);

      // A database made by root (a command run as root) in the user's own directory: read-only for the user.
      const own = ownDir("own");
      const db = join(own, "installstats.db");
      expect(run(["migrate", "--db", db]).code).toBe(0); // as root (or as us)
      chmodSync(db, 0o444);
      for (const args of [
        ["serve", "--db", db, "--port", "0"],
        ["migrate", "--db", db],
        ["import", "-", "--db", db],
      ]) {
        const r = run(args, UNPRIVILEGED!, b);
        expect(r.code).toBe(3);
        line = oneLine(r.err);
        expect(line).toContain(`may not write ${db}`);
        expect(line).toContain("mode 0444");
        expect(line).not.toContain("not a usable SQLite database");
      }
    },
  );

  test.skipIf(UNPRIVILEGED === null || unprivilegedPortStart() <= 80)(
    "--port 80 as an unprivileged user: exit 4, the capability or another port",
    () => {
      const own = ownDir("port80");
      const r = run(["serve", "--port", "80", "--db", join(own, "x.db")], UNPRIVILEGED!, reachableBinary());
      expect(r.code).toBe(4);
      const line = oneLine(r.err);
      expect(line).toContain(
        "cannot listen on 0.0.0.0:80: ports below 1024 need root or the CAP_NET_BIND_SERVICE capability",
      );
      expect(line).toContain("--port 8080");
    },
  );

  test("--host that is not this machine's address: exit 4 with the fix", () => {
    const local = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
    expect(local).not.toContain("10.99.99.99");
    const r = run(["serve", "--host", "10.99.99.99", "--port", "0", "--db", join(dir, "host.db")]);
    expect(r.code).toBe(4);
    const line = oneLine(r.err);
    expect(line).toContain("cannot listen on 10.99.99.99:0: 10.99.99.99 is not an address of this machine");
    expect(line).toContain("--host 0.0.0.0");
    const name = run(["serve", "--host", "no-such-host.invalid", "--port", "0", "--db", join(dir, "host.db")]);
    expect(name.code).toBe(4);
    expect(oneLine(name.err)).toContain("no-such-host.invalid is not a valid address or a name this machine resolves");
  });

  test("each listen error code maps to its cause and fix (EACCES is also provoked for real above, where the machine allows)", () => {
    expect(listenFailure("EACCES", "0.0.0.0", 80, { root: false })).toContain(
      "ports below 1024 need root or the CAP_NET_BIND_SERVICE capability",
    );
    expect(listenFailure("EACCES", "0.0.0.0", 8080, { root: true })).toContain("permission denied");
    expect(listenFailure("EPERM", "0.0.0.0", 443, { root: false })).toContain("CAP_NET_BIND_SERVICE");
    expect(listenFailure("EADDRINUSE", "127.0.0.1", 8080, { root: false })).toContain("the port is in use");
    expect(listenFailure("EADDRNOTAVAIL", "::2", 8080, { root: false })).toStartWith(
      "cannot listen on [::2]:8080: ::2 is not an address of this machine",
    );
    expect(listenFailure("EINVAL", "bad host", 8080, { root: false })).toContain("not a valid address");
    expect(listenFailure(undefined, "h", 1, { root: false })).toBe(
      "cannot listen on h:1: unknown error; choose another --host or --port",
    );
    for (const code of ["EACCES", "EADDRINUSE", "EADDRNOTAVAIL", "EINVAL", "ENOTFOUND", "EMFILE"])
      expect(listenFailure(code, "0.0.0.0", 80, { root: false })).not.toContain("\n");
  });
});

describe("the command line", () => {
  test("unknown options say which option was meant", () => {
    const cases: [string[], string][] = [
      [["serve", "--prot", "8082"], "installstats: unknown option --prot; did you mean --port?"],
      [["--prot", "8082"], "installstats: unknown option --prot; did you mean --port?"],
      [
        ["serve", "-port", "8082"],
        "installstats: unknown option -port; did you mean --port? (long options take two dashes)",
      ],
      [["serve", "-prot", "8082"], "installstats: unknown option -prot; did you mean --port?"],
      [["serve", "--dbb", "x.db"], "installstats: unknown option --dbb; did you mean --db?"],
      [["prune", "--older", "3d"], "installstats: unknown option --older; did you mean --older-than?"],
      [
        ["seed", "--port", "8082"],
        "installstats: seed has no option --port (it is an option of serve, healthcheck); see installstats seed --help",
      ],
      [["serve", "--port"], "installstats: --port needs a value, e.g. --port <value>; see installstats serve --help"],
      [["verify", "--repair=yes"], "installstats: --repair takes no value (got --repair=yes)"],
      [["serve", "--wat"], "installstats: unknown option --wat; see installstats serve --help"],
      [["sreve"], 'installstats: unknown command "sreve"; did you mean serve? (see installstats --help)'],
      [["expotr"], 'installstats: unknown command "expotr"; did you mean export? (see installstats --help)'],
      [["frobnicate"], 'installstats: unknown command "frobnicate"; see installstats --help'],
    ];
    for (const [args, expected] of cases) {
      const r = run(args);
      expect({ args, code: r.code, err: r.err.trimEnd() }).toEqual({ args, code: 2, err: expected });
    }
  });

  test("parsing: values, =values, -- and - as positionals, short forms", () => {
    const options = {
      port: { type: "string" as const },
      force: { type: "boolean" as const },
      help: { type: "boolean" as const, short: "h" },
    };
    expect(parseCommandLine(["--port", "-1", "--force", "-", "--", "--port"], options, { command: "x" })).toEqual({
      values: { port: "-1", force: true },
      positionals: ["-", "--port"],
    });
    expect(parseCommandLine(["--port=8080", "-h", "file"], options, { command: "x" })).toEqual({
      values: { port: "8080", help: true },
      positionals: ["file"],
    });
    expect(() => parseCommandLine(["--port", "--force"], options, { command: "x" })).toThrow("--port needs a value");
    expect(closest("prot", ["port", "host", "db"])).toBe("port");
    expect(closest("hots", ["port", "host", "db"])).toBe("host");
    expect(closest("zzzz", ["port", "host", "db"])).toBeUndefined();
  });

  test("each command's --help shows its own options, not the server's", () => {
    const overview = run(["--help"]);
    expect(overview.code).toBe(0);
    const names = [...overview.out.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1]!);
    expect(names).toEqual([
      "serve",
      "migrate",
      "verify",
      "rejected",
      "seed",
      "backup",
      "restore",
      "export",
      "import",
      "copy",
      "prune",
      "replay",
      "alerts",
      "relay",
      "healthcheck",
    ]);
    expect(overview.out).not.toContain("--max-body");
    expect(overview.out).toContain("Exit codes: 0 ok, 1 failed");
    const serverOnly = [
      "--host",
      "--port",
      "--max-body",
      "--read-token",
      "--admin-token",
      "--cors-origins",
      "--rate-limit",
      "--trusted-proxies",
      "--stuck-after",
      "--retention",
      "--backup-every",
      "--log-level",
    ];
    for (const name of names) {
      const h = run([name, "--help"]);
      expect(h.code).toBe(0);
      expect(h.out).toStartWith(`installstats ${name}`);
      // copy names its two databases with --from and --to instead; healthcheck asks a server, by its address.
      for (const flag of name === "copy"
        ? ["--from", "--to"]
        : name === "healthcheck"
          ? ["--host", "--port"]
          : ["--db"])
        expect(h.out).toContain(flag);
      const lines = h.out.split("\n").filter((l) => /^ {2}-/.test(l));
      if (name === "healthcheck") {
        expect(lines.map((l) => l.trim().split(/\s+/)[0])).toEqual(["--timeout", "--host", "--port", "-h,"]);
      } else if (name === "serve") {
        for (const flag of serverOnly) expect(h.out).toContain(flag);
      } else {
        for (const flag of serverOnly) expect(lines.some((l) => l.trimStart().startsWith(`${flag} `))).toBe(false);
        // Its own options and the few settings it uses: database (and its password file), durability, normalization.
        expect(lines.filter((l) => l.includes("[INSTALLSTATS_")).length).toBeLessThanOrEqual(6);
      }
    }
    expect(run(["seed", "--help"]).out).toContain("--force");
    expect(run(["import", "--help"]).out).toContain("--mask-ips");
  });
});

describe("seed and import say when they did not do what was asked", () => {
  const record = (id: string) =>
    JSON.stringify({
      random_id: id,
      type: "lxc",
      nsapp: "a",
      status: "done",
      outcome: "success",
      error: null,
      created_at: "2026-01-01T00:00:00.000Z",
      updated_at: "2026-01-01T00:01:00.000Z",
      duration_s: 60,
    });

  test("seed refuses a database that already holds installs unless --force; an empty one is seeded", () => {
    const real = join(dir, "real.db");
    const file = join(dir, "real.ndjson");
    writeFileSync(file, `${record("real-1")}\n`);
    expect(run(["import", file, "--db", real]).code).toBe(0);
    const refused = run(["seed", "--records", "20", "--days", "2", "--db", real]);
    expect(refused.code).toBe(2);
    const line = oneLine(refused.err);
    expect(line).toContain(`${real} already holds installs (created 2026-01-01 to 2026-01-01)`);
    expect(line).toContain("--force");
    const forced = run(["seed", "--records", "20", "--days", "2", "--db", real, "--force"]);
    expect(forced.code).toBe(0);
    expect(forced.out).toContain("20 installs");

    const fresh = join(dir, "fresh.db");
    expect(run(["seed", "--records", "20", "--days", "2", "--db", fresh]).code).toBe(0);
    // Seeded data cannot be told from real data afterwards: a second seed is refused the same way.
    expect(run(["seed", "--records", "20", "--days", "2", "--seed", "2", "--db", fresh]).code).toBe(2);
  });

  test("import exits 1 when nothing was imported, and says why", () => {
    const db = join(dir, "import.db");
    const empty = join(dir, "empty.ndjson");
    writeFileSync(empty, "");
    const none = run(["import", empty, "--db", db]);
    expect(none.code).toBe(1);
    expect(none.err).toContain("installstats import: nothing imported: the input holds no records");
    const file = join(dir, "two.ndjson");
    writeFileSync(file, `${record("i-1")}\n${record("i-2")}\n`);
    const first = run(["import", file, "--db", db]);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.out)).toMatchObject({ imported: 2 });
    const again = run(["import", file, "--db", db]);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.out)).toMatchObject({ imported: 0, duplicates: 2 });
    expect(again.err).toContain("nothing imported: all 2 records are in the database already");
  });
});

describe("serving", () => {
  test("a second server on the same database file is refused; the lock goes with the process, also after kill -9", async () => {
    const db = join(dir, "locked.db");
    const first = await startServer(bin, ["--db", db]);
    let firstStopped = false;
    try {
      const second = run(["serve", "--host", "127.0.0.1", "--port", "0", "--db", db]);
      expect(second.code).toBe(3);
      const line = oneLine(second.err);
      expect(line).toContain(
        `${db} is already served by another installstats process (pid ${first.proc.pid}, serving since `,
      );
      expect(line).toContain("stop the other one, or give this one its own --db");
      // The first server is untouched.
      expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
      // Other commands may still use the database beside the server.
      expect(run(["backup", join(dir, "locked-backup.db"), "--db", db]).code).toBe(0);

      await first.stop("SIGKILL");
      firstStopped = true;
      const next = await startServer(bin, ["--db", db]);
      expect(await next.stop("SIGTERM")).toBe(0);
    } finally {
      if (!firstStopped) await first.stop();
    }
  });

  test("start-up prints addresses a person can open and the URLs for installer scripts", async () => {
    const proc = Bun.spawn([bin, "serve", "--host", "0.0.0.0", "--port", "0", "--db", join(dir, "addresses.db")], {
      stdout: "pipe",
      stderr: "pipe",
      env,
    });
    try {
      let out = "";
      const reader = proc.stdout.getReader();
      // A server that never prints the lines is ended, so the read below returns.
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      while (!out.includes("original clients") || !out.endsWith("\n")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`no start-up lines before the server ended: ${out}`);
        out += new TextDecoder().decode(value);
      }
      clearTimeout(timer);
      const port = Number(/listening on http:\/\/0\.0\.0\.0:(\d+)/.exec(out)?.[1]);
      expect(port).toBeGreaterThan(0);
      const lan = Object.entries(networkInterfaces()).flatMap(([, list]) =>
        (list ?? []).filter((i) => !i.internal && i.family === "IPv4").map((i) => i.address),
      );
      expect(out).toContain(`http://localhost:${port}/`);
      for (const address of lan) expect(out).toContain(`http://${address}:${port}/`);
      const scriptHost = lan[0];
      if (scriptHost) {
        expect(out).toContain(`TELEMETRY_URL=http://${scriptHost}:${port}/telemetry`);
        // The old clients append /upload themselves: their base URL is the origin alone.
        expect(out).toContain(`base URL http://${scriptHost}:${port}\n`);
      }
      // What it prints opens.
      expect((await fetch(`http://localhost:${port}/healthz`)).status).toBe(200);
      if (scriptHost) expect((await fetch(`http://${scriptHost}:${port}/healthz`)).status).toBe(200);
    } finally {
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(0);
    }
  });

  test("the start-up lines for each kind of binding", () => {
    const interfaces = {
      lo: [{ address: "127.0.0.1", family: "IPv4", internal: true } as never],
      eth0: [
        { address: "192.168.1.20", family: "IPv4", internal: false } as never,
        { address: "fe80::1", family: "IPv6", internal: false } as never,
      ],
      wlan0: [
        { address: "10.0.0.7", family: "IPv4", internal: false } as never,
        { address: "2001:db8::7", family: "IPv6", internal: false } as never,
      ],
    };
    expect(startupLines("1.2.3", "0.0.0.0", 8080, interfaces)).toEqual([
      "installstats 1.2.3 listening on http://0.0.0.0:8080",
      "  dashboard:  http://localhost:8080/     (this machine)",
      "              http://192.168.1.20:8080/  (eth0)",
      "              http://10.0.0.7:8080/      (wlan0)",
      "  installer scripts, current clients:  TELEMETRY_URL=http://192.168.1.20:8080/telemetry",
      "  installer scripts, original clients: base URL http://192.168.1.20:8080",
      "  (other addresses of this machine work too: 10.0.0.7)",
    ]);
    const v6 = startupLines("1.2.3", "::", 8080, interfaces);
    expect(v6[0]).toBe("installstats 1.2.3 listening on http://[::]:8080");
    expect(v6.join("\n")).toContain("http://[2001:db8::7]:8080/");
    expect(v6.join("\n")).not.toContain("fe80");
    const loopback = startupLines("1.2.3", "127.0.0.1", 9000, interfaces);
    expect(loopback[1]).toBe(
      "  dashboard:  http://localhost:9000/  (this machine only: --host 0.0.0.0 accepts other machines)",
    );
    expect(loopback[2]).toBe(
      "  installer scripts, current clients:  TELEMETRY_URL=http://127.0.0.1:9000/telemetry  (reachable from this machine only)",
    );
    expect(startupLines("1.2.3", "192.168.1.20", 80, interfaces).slice(1, 4)).toEqual([
      "  dashboard:  http://192.168.1.20:80/",
      "  installer scripts, current clients:  TELEMETRY_URL=http://192.168.1.20:80/telemetry",
      "  installer scripts, original clients: base URL http://192.168.1.20:80",
    ]);
    expect(startupLines("1.2.3", "0.0.0.0", 8080, { lo: interfaces.lo })[2]).toContain("no network address found");
  });
});
