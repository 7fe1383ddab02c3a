CREATE TABLE `rollup_labels` (
	`id` integer PRIMARY KEY NOT NULL,
	`label` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `rollup_labels_label` ON `rollup_labels` (`label`);--> statement-breakpoint
-- Cells of the new layout (binary parts, stored slices only, hour cells for 32 days) are not made
-- from the old ones: the engine rebuilds them from the records at start-up (rollup_state.version
-- is 0 below), since their rules are code, not SQL.
DROP TABLE `rollups`;--> statement-breakpoint
CREATE TABLE `rollups` (
	`id` integer PRIMARY KEY NOT NULL,
	`grain` integer NOT NULL,
	`slice` integer NOT NULL,
	`bucket` integer NOT NULL,
	`data` blob NOT NULL,
	`apps` blob,
	`errors` blob
);
--> statement-breakpoint
CREATE UNIQUE INDEX `rollups_cell` ON `rollups` (`grain`,`slice`,`bucket`);--> statement-breakpoint
CREATE INDEX `rollups_grain_bucket` ON `rollups` (`grain`,`bucket`);--> statement-breakpoint
UPDATE `rollup_state` SET `version` = 0;
