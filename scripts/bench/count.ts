// A deterministic workload for instruction counts (valgrind --tool=callgrind): the same script run
// against two trees, so the difference of two counts is the cost of the work and nothing else.
// Wall-clock and CPU time drift with whatever else shares the machine; instruction counts barely do.
//
//   ingest <tree> <executions> [summaries]  in-process, /telemetry v2 lifecycles through the Bun route
//       handler (intake, writer, SQLite, answer), 32 executions at a time, a fifth failing with a
//       ~10 KiB log tail; then GET /data/summary `summaries` times
//   intake <tree> <executions> <rounds>     the bodies alone through ingest/pipeline.ts intake
//   read <tree> <database> <reads> [path]   GET path (default /data/summary) over a seeded file
//
// Run each with the work and without (0), under callgrind, and subtract:
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null bun scripts/bench/count.ts ingest /tmp/ref 200 0
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null bun scripts/bench/count.ts ingest /tmp/ref 0 0
// (`<tree>` is a checkout with node_modules: git archive <commit> | tar -x -C /tmp/ref, then link
// or install node_modules.) A server cannot be counted this way: valgrind 3.19 does not know the
// epoll_pwait2 system call Bun's event loop waits in, and the server never answers.
const [mode, tree, a = "0", b = "0", path = "/data/summary"] = process.argv.slice(2);
if (!tree || !["ingest", "intake", "read"].includes(mode ?? "")) {
  console.error("usage: bun scripts/bench/count.ts ingest|intake|read <tree> ... (see the comment at the top)");
  process.exit(2);
}

let seed = 12345;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
const APPS = ["docker", "homeassistant", "pihole", "jellyfin", "adguard", "debian", "ubuntu", "vaultwarden", "plex"];
const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
const TAIL = Array.from(
  { length: 90 },
  (_, l) =>
    `[10:${l % 60}:00] step ${l}: compiling module_${l}.c -> module_${l}.o (warning: unused variable 'tmp${l}')`,
).join("\\n");
const STEPS = ["installing", "validation", "configuring"];

/** The fields every report of execution `i` carries. */
function fields(i: number): string {
  const rid = `${hex((i * 2654435761) >>> 0, 8)}-0000-4000-8000-${hex(i, 12)}`;
  const eid = `${hex((i * 40503) >>> 0, 8)}-1111-4000-9000-${hex(i, 12)}`;
  return `"payload_version": 2, "random_id": "${rid}", "execution_id": "${eid}", "type": "lxc", "nsapp": "${pick(APPS)}", "ct_type": 1, "disk_size": ${pick([4, 8, 16])}, "core_count": ${pick([1, 2, 4])}, "ram_size": ${pick([1024, 2048])}, "os_type": "debian", "os_version": "12", "pve_version": "8.2.2", "method": "default", "cpu_vendor": "intel", "cpu_model": "Intel(R) N100", "gpu_vendor": "intel", "gpu_model": "UHD Graphics 630", "gpu_passthrough": "no", "ram_speed": "3200", "arch": "amd64", "platform": "pve", "has_arm": false, "kernel_version": "6.8.12-4-pve", "app_version": "1.2.${i % 5}", "repo_source": "ProxmoxVE", "repo_slug": "community-scripts/ProxmoxVE"`;
}

/** Report `step` (0-2 pings, 3 the final report) of an execution. */
function body(f: string, step: number, failed: boolean): string {
  if (step < 3)
    return `{${f}, "status": "${STEPS[step]}", "exit_code": 0, "error": "", "install_duration": ${step * 40}}`;
  if (failed)
    return `{${f}, "status": "failed", "exit_code": 100, "error": "exit_code=100 | APT: package installation failed\\n---\\n${TAIL}", "error_category": "dependency", "failed_command": "apt-get install -y libssl-dev", "failed_line": 212, "install_duration": 130}`;
  return `{${f}, "status": "success", "exit_code": 0, "error": "", "install_duration": 200}`;
}

const executions = (n: number) => Array.from({ length: n }, (_, i) => ({ f: fields(i), failed: rnd() < 0.2 }));

if (mode === "intake") {
  const { intake } = await import(`${tree}/src/ingest/pipeline.ts`);
  const { defaults } = await import(`${tree}/src/config.ts`);
  const bodies = executions(Number(a)).flatMap(({ f, failed }) =>
    [0, 1, 2, 3].map((step) => new TextEncoder().encode(body(f, step, failed))),
  );
  let ok = 0;
  for (let r = 0; r < Number(b); r++)
    for (const raw of bodies) if (intake("telemetry", raw, 1.78e12, defaults).ok) ok++;
  console.error(JSON.stringify({ mode, bodies: bodies.length, rounds: Number(b), ok }));
} else if (mode === "ingest") {
  const { testApp } = await import(`${tree}/test/helpers/app.ts`);
  const app = await testApp();
  const handler = app.app.config.serve.routes["/telemetry"].POST as (r: Request, s: null) => Promise<Response>;
  const runs = executions(Number(a));
  let bad = 0;
  for (let g = 0; g < runs.length; g += 32) {
    const group = runs.slice(g, g + 32);
    for (let step = 0; step < 4; step++) {
      const answers = await Promise.all(
        group.map(({ f, failed }) =>
          handler(new Request("http://localhost/telemetry", { method: "POST", body: body(f, step, failed) }), null),
        ),
      );
      for (const res of answers) if ((await res.text()) && res.status >= 300) bad++;
    }
    app.clock.advance(1000);
  }
  for (let i = 0; i < Number(b); i++) if ((await app.get("/data/summary")).status !== 200) bad++;
  console.error(JSON.stringify({ mode, executions: runs.length, summaries: Number(b), bad }));
} else {
  const { defaults } = await import(`${tree}/src/config.ts`);
  const { createLogger } = await import(`${tree}/src/log.ts`);
  const { createRuntime } = await import(`${tree}/src/runtime.ts`);
  const { openSqliteEngine } = await import(`${tree}/src/store/sqlite/engine.ts`);
  const engine = openSqliteEngine(a, { durability: "normal", migrate: true });
  const log = createLogger("error", () => {}, Date.now);
  const runtime = await createRuntime({ ...defaults }, { clock: Date.now, log, version: "0.0.0" }, engine);
  let bad = 0;
  for (let i = 0; i < Number(b); i++) {
    const res = await runtime.app.handle(new Request(`http://localhost${path}`));
    await res.text();
    if (res.status !== 200) bad++;
  }
  console.error(JSON.stringify({ mode, path, reads: Number(b), bad }));
}
process.exit(0);

export {};
