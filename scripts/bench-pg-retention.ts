// Retention of a month through the engine, on PostgreSQL: `installstats seed` fills a database
// with a year of installs, then the oldest whole month is pruned the way `installstats prune` does
// it (maintenance/prune.ts through the Store), timed, with the WAL it wrote, and rollups checked
// against a recount afterwards (verify). docs/decisions/2026-11-26-postgresql-large-tables.md.
//
//   bun scripts/bench-pg-retention.ts [--records 1000000] [--url postgres://...]
//
// Without --url a throwaway server (test/helpers/postgres.ts) is started and removed at the end.
// The same script run from an older checkout measures that engine (the same seed, the same month).
import { parseArgs } from "node:util";
import postgres from "postgres";
import { pruneOlderThan } from "../src/maintenance/prune.ts";
import { verifyRollups } from "../src/maintenance/verify.ts";
import { seedDatabase, seedOptions } from "../src/seed/seed.ts";
import { openEngine } from "../src/store/open.ts";
import { startPostgres, type PgServer } from "../test/helpers/postgres.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { records: { type: "string", default: "1000000" }, url: { type: "string" } },
});
const RECORDS = Number(values.records);
const END = Date.UTC(2026, 10, 1);
const SETTINGS = {
  shared_buffers: "1GB",
  maintenance_work_mem: "512MB",
  max_wal_size: "16GB",
  checkpoint_timeout: "30min",
};
const log = (m: string) => process.stderr.write(`[retention ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

let server: PgServer | null = null;
const admin = values.url ?? (server = await startPostgres(SETTINGS)).url;
try {
  const a = postgres(admin, { max: 1, onnotice: () => {} });
  await a.unsafe("DROP DATABASE IF EXISTS retention_bench WITH (FORCE)");
  await a.unsafe("CREATE DATABASE retention_bench");
  await a.end();
  const url = new URL(admin);
  url.pathname = "/retention_bench";
  const engine = await openEngine(url.toString(), { durability: "normal", migrate: true, create: true });
  const { store } = engine;
  log(`seeding ${RECORDS.toLocaleString()}`);
  const seeded = await seedDatabase(store, seedOptions({ records: RECORDS, end: END }));
  log(`seeded in ${seeded.seconds.toFixed(0)} s`);
  // A running node's fold job would have folded the closed hours by now.
  await store.write([{ kind: "fold", until: END, at: END }]);
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  await sql`VACUUM ANALYZE`;
  await sql`CHECKPOINT`;
  const span = (await store.recordSpan())!;
  const first = new Date(span.first);
  const cutoff = Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 1);
  const [{ n } = { n: 0 }] = await sql<
    { n: string }[]
  >`SELECT count(*)::text AS n FROM executions WHERE created_at < ${cutoff}`;
  const [{ lsn } = { lsn: "" }] = await sql<{ lsn: string }[]>`SELECT pg_current_wal_lsn()::text AS lsn`;
  log(`pruning ${n} executions created before ${new Date(cutoff).toISOString().slice(0, 10)}`);
  const t0 = performance.now();
  const pruned = await pruneOlderThan({ store, commit: (ops) => store.write(ops) }, { cutoff, now: END });
  const seconds = (performance.now() - t0) / 1000;
  const [{ wal } = { wal: "0" }] = await sql<
    { wal: string }[]
  >`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), ${lsn}::pg_lsn)::text AS wal`;
  const check = await verifyRollups(store);
  console.log(
    `| ${RECORDS.toLocaleString()} seeded (${Math.round(seeded.records / seeded.seconds)}/s) | oldest month: ${Number(n).toLocaleString()} executions | pruned ${pruned.executions.toLocaleString()} in ${seconds.toFixed(1)} s | WAL ${(Number(wal) / 1e6).toFixed(0)} MB | verify ${check.ok ? "ok" : `NOT ok (${check.mismatches.length} cells)`} |`,
  );
  await sql.end();
  await engine.close();
} finally {
  await server?.stop();
}
process.exit(0);
