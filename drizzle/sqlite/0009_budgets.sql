CREATE TABLE `bodies` (
	`hash` text PRIMARY KEY NOT NULL,
	`size` integer NOT NULL,
	`codec` text NOT NULL,
	`data` blob NOT NULL,
	`refs` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `budget_counters` (
	`name` text PRIMARY KEY NOT NULL,
	`value` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `held_reports` ADD `codec` text;--> statement-breakpoint
ALTER TABLE `held_reports` ADD `data` blob;--> statement-breakpoint
ALTER TABLE `held_reports` ADD `cost` integer;--> statement-breakpoint
ALTER TABLE `rejected_reports` ADD `body_store` text DEFAULT 'inline' NOT NULL;--> statement-breakpoint
ALTER TABLE `rejected_reports` ADD `body_size` integer;--> statement-breakpoint
ALTER TABLE `rejected_reports` ADD `body_hash` text;--> statement-breakpoint
ALTER TABLE `rejected_reports` ADD `cost` integer;--> statement-breakpoint
CREATE INDEX `rejected_reports_head` ON `rejected_reports` (`id`) WHERE "rejected_reports"."body_store" = 'head';--> statement-breakpoint
-- The budgets' running totals, from what is stored so far (src/store/sqlite/budgets.ts: an entry
-- without a cost counts its row, message and inline body; a held report its row and JSON).
INSERT INTO `budget_counters` (`name`, `value`)
SELECT 'log.bytes', coalesce(sum(64 + length(`body`) + length(`message`) + coalesce(length(`field`), 0) + coalesce(length(`random_id`), 0)), 0) FROM `rejected_reports`
UNION ALL SELECT 'log.entries', count(*) FROM `rejected_reports`
UNION ALL SELECT 'held.bytes', coalesce(sum(64 + length(`report`) + length(`execution_id`) + length(`random_id`)), 0) FROM `held_reports`
UNION ALL SELECT 'held.count', count(*) FROM `held_reports`;
