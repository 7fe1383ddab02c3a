-- One meaning for a user's decline (docs/decisions/2026-11-27-declines-are-aborts.md): a failure
-- that ended with exit code 113, 114, 122, 253 or 254 is an abort by the user, whatever client
-- sent it (domain/error-category.ts asDecline applies the rule to every report from now on; held
-- reports are read with it). Executions stored before the rule are moved here. The rollup cells
-- hold what ROLLUP_VERSION 2 counts: the mark says so, and the first node to start recounts them
-- (engine.ts upgradeRollups). Written by hand (drizzle-kit generate --custom): data, not schema.
UPDATE "executions" SET "outcome" = 'aborted', "error_category" = 'user_aborted'
WHERE "outcome" = 'failed' AND "exit_code" IN (113, 114, 122, 253, 254);
--> statement-breakpoint
INSERT INTO "marks" ("name", "value") VALUES ('rollup_version', 2) ON CONFLICT ("name") DO NOTHING;
