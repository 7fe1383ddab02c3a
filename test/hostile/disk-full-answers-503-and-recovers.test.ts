// Disk full: the compiled binary on a tiny filesystem answers 503 + Retry-After when SQLite
// cannot write, loses nothing it acknowledged, and recovers by itself when space returns.
import { afterAll, expect, test, setDefaultTimeout } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary, startServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { startReport, testApp } from "../helpers/app.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

const mountPoint = tempDir("installstats-full-");
// A 4 MiB tmpfs needs root (CI and this machine run as root); elsewhere the failure is simulated.
const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint]).exitCode === 0;

afterAll(async () => {
  if (mounted) Bun.spawnSync(["umount", "-l", mountPoint]);
});

test.if(mounted)(
  "a real full filesystem: 503 with Retry-After, nothing acknowledged lost, recovery when space returns",
  async () => {
    const bin = await compiledBinary();
    const db = join(mountPoint, "full.db");
    const filler = join(mountPoint, "filler");
    writeFileSync(filler, Buffer.alloc(1024 * 1024)); // deleted later to give space back
    const server = await startServer(bin, ["--db", db, "--durability", "normal"]);
    const acked: string[] = [];
    const statuses = new Map<number, number>();
    let retryAfter: string | null = null;
    const post = async (id: string) => {
      const res = await fetch(`${server.url}/upload`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        // Long error-like text so the filesystem fills in a few thousand reports.
        body: JSON.stringify(
          startReport(id, { nsapp: `app-${id.length % 7}`, os_version: "x".repeat(100), method: `m-${id}` }),
        ),
      });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 201) acked.push(id);
      if (res.status === 503) {
        retryAfter = res.headers.get("retry-after");
        expect(await res.json()).toMatchObject({ error: "storage_unavailable" });
      } else await res.arrayBuffer();
      return res.status;
    };
    try {
      // Fill until writes fail (bounded).
      let sawFull = false;
      for (let round = 0; round < 200 && !sawFull; round++) {
        const codes = await Promise.all(Array.from({ length: 50 }, (_, i) => post(`full-${round}-${i}`)));
        sawFull = codes.includes(503);
      }
      expect(sawFull).toBe(true);
      expect(retryAfter).not.toBeNull();
      expect([...statuses.keys()].every((s) => s === 201 || s === 503)).toBe(true); // no other 5xx, no crash
      // Nearly full, small writes may still fit: health reports the last attempt, so ask right after a failure.
      let degraded = false;
      for (let i = 0; i < 100 && !degraded; i++) {
        if ((await post(`probe-${i}`)) === 503) degraded = (await fetch(`${server.url}/healthz`)).status === 503;
      }
      expect(degraded).toBe(true);

      rmSync(filler); // space returns
      let recovered = false;
      for (let i = 0; i < 50 && !recovered; i++) {
        recovered = (await post(`after-${i}`)) === 201;
        if (!recovered) await Bun.sleep(100);
      }
      expect(recovered).toBe(true);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
    const check = new Database(db, { readonly: true });
    const stored = new Set(
      (check.query("SELECT random_id FROM executions").all() as { random_id: string }[]).map((r) => r.random_id),
    );
    expect(check.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    check.close();
    expect(acked.filter((id) => !stored.has(id))).toEqual([]);
    console.log(
      `disk-full test: ${acked.length} acknowledged, ${statuses.get(503) ?? 0} answered 503, all acknowledged present`,
    );
  },
);

test.if(!mounted)(
  "simulated at the storage edge (no privilege to mount a small filesystem): 503, then recovery",
  async () => {
    const t = await testApp();
    expect((await t.post("/upload", startReport("before"))).status).toBe(201);
    t.sqlite.run("PRAGMA max_page_count = 1"); // SQLite now reports the database full
    const full = await t.post("/upload", startReport("during"));
    expect(full.status).toBe(503);
    expect(full.headers.get("retry-after")).not.toBeNull();
    t.sqlite.run("PRAGMA max_page_count = 1073741823");
    expect((await t.post("/upload", startReport("after"))).status).toBe(201);
    expect((await t.get("/api/installs/before")).status).toBe(200);
  },
);
