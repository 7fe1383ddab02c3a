CREATE TABLE `rollup_state` (
	`id` integer PRIMARY KEY NOT NULL,
	`folded_until` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `rollups_grain_bucket` ON `rollups` (`grain`,`bucket`);--> statement-breakpoint
-- Existing rollups hold every record at every grain: folded up to the hour after the newest
-- record, and at least up to the current hour (history loaded later goes to every grain at once).
INSERT INTO `rollup_state` (`id`, `folded_until`) VALUES (1, max(unixepoch() * 1000 / 3600000 * 3600000, coalesce((SELECT max(`created_at`) FROM `installs`) / 3600000 * 3600000 + 3600000, 0)));
