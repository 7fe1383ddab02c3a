-- The community's blocked outcome and its wider user-abort codes
-- (docs/decisions/2026-11-27-blocked-adopted.md): a failure that ended with exit code 113, 114,
-- 122, 129, 130, 143, 253 or 254 is an abort by the user (category user_aborted); one that ended
-- with a code raised before the application's script ran (103-111, 116-121, 123, 200, 203-227,
-- 231) is blocked, its category kept (domain/outcome.ts outcomeOfFailure applies the rule to every
-- report from now on; held reports are read with it). Executions stored before the rule are moved
-- here; the rollup cells hold what ROLLUP_VERSION 4 counts, the mark says so, and the first node to
-- start recounts them (engine.ts upgradeRollups). Written by hand (drizzle-kit generate --custom):
-- data, not schema.
UPDATE "executions" SET "outcome" = 'aborted', "error_category" = 'user_aborted'
WHERE "outcome" = 'failed' AND "exit_code" IN (113, 114, 122, 129, 130, 143, 253, 254);
--> statement-breakpoint
UPDATE "executions" SET "outcome" = 'blocked'
WHERE "outcome" = 'failed' AND "exit_code" IN (103, 104, 105, 106, 107, 108, 109, 110, 111, 116, 117, 118, 119, 120, 121, 123, 200, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 231);
