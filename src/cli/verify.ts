import { verifyRollups } from "../report/verify.ts";
import { openDatabase } from "../store/database.ts";
import { createSqliteReads } from "../store/sqlite-reads.ts";
import type { Command } from "./command.ts";

export const verify: Command = {
  name: "verify",
  summary: "check database integrity and that every rollup equals a recount of the records (exit 1 if not)",
  run({ config, out, progress }) {
    const { sqlite, db } = openDatabase(config.db, { durability: config.durability, migrate: true });
    const integrity = (sqlite.query("PRAGMA integrity_check").all() as { integrity_check: string }[]).map((r) => r.integrity_check);
    const day = (t: number) => new Date(t).toISOString().slice(0, 10);
    const rollups = verifyRollups(createSqliteReads(sqlite, db), (d, end) => progress(`verifying ${day(d)} (until ${day(end)})`));
    progress("");
    sqlite.close();
    const ok = integrity.length === 1 && integrity[0] === "ok" && rollups.ok;
    out(`${JSON.stringify({ ok, integrity, rollups }, null, 2)}\n`);
    return ok ? 0 : 1;
  },
};
