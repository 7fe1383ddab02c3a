#!/usr/bin/env bun
// PostgreSQL drivers compared on the PostgreSQL engine's write pattern (docs/decisions/2026-11-25-postgresql-engine.md): batches of 100 execution rows plus one multi-row rollup increment
// per transaction, with postgres.js and with Bun's built-in SQL, one writer and two at once; then
// a streaming replica's view of the result. A throwaway server on 127.0.0.1, removed at the end.
//
//   bun scripts/bench-pg-drivers.ts
import postgres from "postgres";
import { SQL } from "bun";
import { startPostgres, startReplica } from "../test/helpers/postgres.ts";
const t0 = performance.now();
const pg = await startPostgres();
console.log("started in", (performance.now() - t0).toFixed(0), "ms", pg.url);
const rep = await startReplica(pg);
console.log("replica at", rep.url, (performance.now() - t0).toFixed(0), "ms");
try {
  const sql = postgres(pg.url, { max: 4, onnotice: () => {} });
  await sql`CREATE TABLE e (id text PRIMARY KEY, rid text NOT NULL, nsapp text, created bigint NOT NULL, data text)`;
  await sql`CREATE TABLE r (grain smallint, bucket bigint, slice text, dim text, value text, c0 bigint, c1 bigint, c2 bigint, c3 bigint, c4 bigint, PRIMARY KEY (grain, bucket, slice, dim, value))`;
  const N = 200,
    B = 100;
  async function writer(client: "pgjs" | "bunsql", tag: string) {
    const t = performance.now();
    const bun = client === "bunsql" ? new SQL(pg.url) : null;
    for (let b = 0; b < N; b++) {
      const rows = Array.from({ length: B }, (_, i) => ({
        id: `${tag}-${b}-${i}`,
        rid: `r-${b}-${i}`,
        nsapp: "app" + (i % 30),
        created: Date.now(),
        data: "x".repeat(600),
      }));
      const keys = Array.from({ length: 600 }, (_, k) => ({
        grain: k % 3,
        bucket: 0,
        slice: "s" + (k % 4),
        dim: "d" + (k % 23),
        value: "v" + (k % 50),
      }));
      keys.sort(
        (a, b) =>
          a.grain - b.grain ||
          a.slice.localeCompare(b.slice) ||
          a.dim.localeCompare(b.dim) ||
          a.value.localeCompare(b.value),
      );
      const uniq = [...new Map(keys.map((k) => [`${k.grain}|${k.slice}|${k.dim}|${k.value}`, k])).values()];
      if (bun) {
        await bun.begin(async (tx) => {
          await tx`INSERT INTO e ${tx(rows)} ON CONFLICT DO NOTHING`;
          await tx`INSERT INTO r (grain,bucket,slice,dim,value,c0,c1,c2,c3,c4) SELECT * FROM unnest(${uniq.map((k) => k.grain)}::smallint[], ${uniq.map((k) => k.bucket)}::bigint[], ${uniq.map((k) => k.slice)}::text[], ${uniq.map((k) => k.dim)}::text[], ${uniq.map((k) => k.value)}::text[], ${uniq.map(() => 1)}::bigint[], ${uniq.map(() => 0)}::bigint[], ${uniq.map(() => 0)}::bigint[], ${uniq.map(() => 0)}::bigint[], ${uniq.map(() => 0)}::bigint[]) ON CONFLICT (grain,bucket,slice,dim,value) DO UPDATE SET c0 = r.c0 + excluded.c0`;
        });
      } else {
        await sql.begin(async (tx) => {
          await tx`INSERT INTO e ${tx(rows)} ON CONFLICT DO NOTHING`;
          await tx`INSERT INTO r (grain,bucket,slice,dim,value,c0,c1,c2,c3,c4) SELECT * FROM unnest(${uniq.map((k) => k.grain)}::smallint[], ${uniq.map((k) => k.bucket)}::bigint[], ${uniq.map((k) => k.slice)}::text[], ${uniq.map((k) => k.dim)}::text[], ${uniq.map((k) => k.value)}::text[], ${uniq.map(() => 1)}::bigint[], ${uniq.map(() => 0)}::bigint[], ${uniq.map(() => 0)}::bigint[], ${uniq.map(() => 0)}::bigint[], ${uniq.map(() => 0)}::bigint[]) ON CONFLICT (grain,bucket,slice,dim,value) DO UPDATE SET c0 = r.c0 + excluded.c0`;
        });
      }
    }
    if (bun) await bun.close();
    return performance.now() - t;
  }
  for (const client of ["pgjs", "bunsql"] as const) {
    const cpu0 = process.cpuUsage();
    const ms = await writer(client, client + "1");
    const cpu = process.cpuUsage(cpu0);
    console.log(
      client,
      "1 writer:",
      (((N * B) / ms) * 1000).toFixed(0),
      "rows/s,",
      ((cpu.user + cpu.system) / (N * B)).toFixed(1),
      "µs client CPU/row",
    );
    const t = performance.now();
    await Promise.all([writer(client, client + "a"), writer(client, client + "b")]);
    console.log(client, "2 concurrent writers:", (((2 * N * B) / (performance.now() - t)) * 1000).toFixed(0), "rows/s");
  }
  const sum = (await sql<{ sum: string }[]>`SELECT sum(c0)::bigint AS sum FROM r`)[0]!.sum;
  console.log(
    "rollup increments:",
    sum,
    "(one per key and batch, 6 writers x",
    N,
    "batches x 600 keys:",
    6 * N * 600,
    ")",
  );
  await Bun.sleep(1000);
  const rsql = postgres(rep.url, { max: 1 });
  const n = (await rsql<{ n: number }[]>`SELECT count(*)::int AS n FROM e`)[0]!.n;
  const lag = (
    await rsql<{ lag: number }[]>`SELECT extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float AS lag`
  )[0]!.lag;
  console.log("replica sees", n, "rows; lag", lag);
  await rsql.end();
  await sql.end();
} finally {
  await rep.stop();
  await pg.stop();
}
