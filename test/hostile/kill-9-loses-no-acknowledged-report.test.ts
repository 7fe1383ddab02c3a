// Crash safety: under concurrent load the binary is killed with SIGKILL; after a restart every
// report that was answered with a 2xx is present, and the database is intact.
import { expect, test, setDefaultTimeout } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { compiledBinary, startServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { startReport } from "../helpers/app.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

const WORKERS = 32;
const LOAD_MS = 1500;

async function worker(url: string, w: number, deadline: number, ackedStarts: Set<string>, ackedDone: Set<string>) {
  const post = (path: string, body: object) =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  for (let i = 0; Date.now() < deadline; i++) {
    const id = `crash-${w}-${i}`;
    try {
      const start = await post("/upload", startReport(id, { nsapp: `app-${i % 50}` }));
      if (start.status >= 200 && start.status < 300) ackedStarts.add(id);
      else return;
      const done = await post("/upload/updatestatus", {
        status: i % 3 ? "done" : "failed",
        error: i % 3 ? "none" : `exit code ${i % 7}`,
        random_id: id,
      });
      if (done.status >= 200 && done.status < 300) ackedDone.add(id);
      else return;
    } catch {
      return; // the server is gone
    }
  }
}

for (const durability of ["full", "normal"] as const) {
  test(`kill -9 under load loses no acknowledged report (durability=${durability})`, async () => {
    const bin = await compiledBinary();
    const db = join(tempDir(), "crash.db");
    const server = await startServer(bin, ["--db", db, "--durability", durability]);
    const ackedStarts = new Set<string>();
    const ackedDone = new Set<string>();
    const deadline = Date.now() + 10_000; // bound, in case the kill below does not land
    const load = Array.from({ length: WORKERS }, (_, w) => worker(server.url, w, deadline, ackedStarts, ackedDone));
    await Bun.sleep(LOAD_MS);
    server.proc.kill("SIGKILL");
    await server.proc.exited;
    await Promise.all(load);
    expect(ackedStarts.size).toBeGreaterThan(200); // the load really ran
    console.log(
      `crash test (${durability}): ${ackedStarts.size} start reports and ${ackedDone.size} updates acknowledged before SIGKILL`,
    );

    const restarted = await startServer(bin, ["--db", db]);
    try {
      const ids = [...ackedStarts];
      const missing: string[] = [];
      const notFinal: string[] = [];
      for (let i = 0; i < ids.length; i += 64) {
        await Promise.all(
          ids.slice(i, i + 64).map(async (id) => {
            const res = await fetch(`${restarted.url}/api/installs/${id}`);
            if (res.status !== 200) return missing.push(id);
            const rec = (await res.json()) as { outcome: string };
            if (ackedDone.has(id) && rec.outcome === "in_progress") notFinal.push(id);
          }),
        );
      }
      expect(missing).toEqual([]);
      expect(notFinal).toEqual([]);
    } finally {
      expect(await restarted.stop()).toBe(0);
    }
    const check = new Database(db, { readonly: true });
    expect(check.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    check.close();
    // Rollups agree with a recount of what survived.
    const verify = Bun.spawnSync([bin, "verify", "--db", db]);
    expect(verify.exitCode).toBe(0);
    expect(JSON.parse(verify.stdout.toString())).toMatchObject({ ok: true, rollups: { ok: true, mismatches: [] } });
  });
}
