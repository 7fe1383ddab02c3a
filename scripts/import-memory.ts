// Peak memory of `installstats import` of a telemetry-service dump by its size (issue 26): writes
// dumps of the community service's table (FORMAT JSONEachRow) of the given row counts, each run an
// install's start, progress pings and final row as its service stores them (about 4 rows a run,
// one in five failed with a 2-6 KiB log tail, retries, stuck runs with the cleanup's row, a few
// whole-row duplicates), imports each into a new SQLite database with the compiled binary under
// /usr/bin/time, and prints rows, dump size, peak RSS, time and rows per second.
//
//   bun scripts/import-memory.ts [rows...]        default: 100000 1000000
//   INSTALLSTATS_BIN=path to use a built binary (else one is built into the temporary directory)
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const sizes = process.argv.slice(2).map(Number);
const ROWS = sizes.length > 0 ? sizes : [100_000, 1_000_000];
const dir = mkdtempSync(join(tmpdir(), "installstats-import-memory-"));
const T0 = Date.now() - 200 * 24 * 3600_000;

function ch(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").replace("Z", "");
}

const apps = [
  "jellyfin",
  "docker",
  "nextcloud",
  "immich",
  "pihole",
  "adguard",
  "homeassistant",
  "vaultwarden",
  "nginx",
  "gitea",
];
const columns = (over: Record<string, string | number>) => ({
  id: crypto.randomUUID().replaceAll("-", "").slice(0, 30),
  nsapp: "",
  type: "lxc",
  status: "",
  method: "default",
  created: "",
  core_count: 2,
  ct_type: 1,
  disk_size: 8,
  ram_size: 2048,
  exit_code: 0,
  error: "",
  error_category: "",
  os_type: "debian",
  os_version: "12",
  pve_version: "8.4.1",
  random_id: "",
  execution_id: "",
  repo_source: "ProxmoxVE",
  repo_slug: "community-scripts/ProxmoxVE",
  cpu_vendor: "amd",
  cpu_model: "AMD Ryzen 7 5800X",
  gpu_vendor: "intel",
  gpu_model: "Intel UHD Graphics 770",
  gpu_passthrough: "no",
  ram_speed: "3200",
  install_duration: 0,
  has_arm: 0,
  platform: "pve",
  payload_version: 2,
  arch: "amd64",
  failed_command: "",
  failed_line: 0,
  kernel_version: "6.8.12-4-pve",
  app_version: "",
  ...over,
});

async function writeDump(path: string, rows: number): Promise<void> {
  const file = await open(path, "w");
  let buffer: string[] = [];
  let written = 0;
  let run = 0;
  const put = async (row: Record<string, string | number>) => {
    buffer.push(JSON.stringify(row));
    written++;
    if (buffer.length >= 5000) {
      await file.write(`${buffer.join("\n")}\n`);
      buffer = [];
    }
  };
  while (written < rows) {
    run++;
    const id = crypto.randomUUID();
    const at = T0 + run * 997;
    const base = { nsapp: apps[run % apps.length]!, random_id: id, execution_id: id };
    await put(columns({ ...base, status: "installing", created: ch(at) }));
    await put(columns({ ...base, status: "validation", created: ch(at + 5000) }));
    await put(
      columns({
        ...base,
        status: "configuring",
        created: ch(at + 60_000),
        os_type: "",
        disk_size: 0,
        core_count: 0,
        ram_size: 0,
        ct_type: 0,
        cpu_vendor: "unknown",
        gpu_vendor: "unknown",
        gpu_passthrough: "unknown",
      }),
    );
    if (run % 50 === 0) {
      await put(
        columns({
          ...base,
          status: "unknown",
          created: ch(at + 3_700_000),
          error: "Installation timed out - no completion status received after 1h",
          error_category: "timeout",
        }),
      );
    } else if (run % 5 === 0) {
      const log = `E: Unable to locate package ${base.nsapp}-${run}\n`.repeat(50 + (run % 100));
      const failed = columns({
        ...base,
        status: "failed",
        created: ch(at + 300_000),
        exit_code: 100,
        error: `exit_code=100 | APT failed | at line 57: apt-get install -y ${base.nsapp}\n---\n${log}`,
        error_category: "dependency",
        failed_command: `apt-get install -y ${base.nsapp}`,
        failed_line: 57,
        install_duration: 300,
      });
      await put(failed);
      if (run % 25 === 0) await put(failed); // a whole row twice
      const retry = `${id}-r`;
      await put(columns({ ...base, execution_id: retry, status: "installing", created: ch(at + 400_000) }));
      await put(
        columns({ ...base, execution_id: retry, status: "success", created: ch(at + 700_000), install_duration: 300 }),
      );
    } else {
      await put(columns({ ...base, status: "success", created: ch(at + 240_000), install_duration: 240 }));
    }
  }
  if (buffer.length > 0) await file.write(`${buffer.join("\n")}\n`);
  await file.close();
}

async function binary(): Promise<string> {
  if (process.env.INSTALLSTATS_BIN) return process.env.INSTALLSTATS_BIN;
  const out = join(dir, "installstats");
  const build = Bun.spawnSync(["bun", "scripts/build.ts", "--outfile", out], {
    cwd: new URL("..", import.meta.url).pathname,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr.toString()}`);
  return out;
}

try {
  const bin = await binary();
  console.log("rows\tdump MiB\tpeak RSS MiB\tseconds\trows/s\tsummary");
  for (const rows of ROWS) {
    const dump = join(dir, `dump-${rows}.json`);
    await writeDump(dump, rows);
    const db = join(dir, `import-${rows}.db`);
    const report = join(dir, "time.txt");
    const r = Bun.spawnSync(
      ["/usr/bin/time", "-v", "-o", report, bin, "import", dump, "--db", db, "--durability", "normal"],
      { stdout: "pipe", stderr: "pipe", env: { ...process.env, TMPDIR: dir } },
    );
    const timed = await Bun.file(report).text();
    const rss = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(timed)?.[1]) / 1024;
    const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)/.exec(timed)?.[1] ?? "?";
    const seconds = wall.split(":").reduce((acc, part) => acc * 60 + Number(part), 0);
    const mib = statSync(dump).size / 1048576;
    console.log(
      `${rows}\t${mib.toFixed(0)}\t${rss.toFixed(0)}\t${seconds.toFixed(1)}\t${Math.round(rows / seconds)}\t${r.stdout.toString().trim()}`,
    );
    if (r.exitCode !== 0) console.log(`exit ${r.exitCode}: ${r.stderr.toString()}`);
    rmSync(dump, { force: true });
    rmSync(db, { force: true });
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
