-- A new database starts with every hour before the current one folded, as SQLite's does
-- (drizzle/sqlite/0004_hour_cells.sql): nothing is stored in them, so that is true, and executions
-- loaded into it later (copy, seed, import) are counted into hour, day and month rows at once
-- instead of waiting, all of them, for one fold. A database with rollup rows keeps its mark.
-- Written by hand (drizzle-kit generate --custom): data, not schema.
INSERT INTO "marks" ("name", "value")
SELECT 'folded_until', (extract(epoch FROM date_trunc('hour', now() AT TIME ZONE 'UTC')) * 1000)::bigint
WHERE NOT EXISTS (SELECT 1 FROM "rollup_counts") AND NOT EXISTS (SELECT 1 FROM "marks" WHERE "name" = 'folded_until');
