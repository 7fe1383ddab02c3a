CREATE TABLE `error_signatures` (
	`id` text PRIMARY KEY NOT NULL,
	`signature` text NOT NULL,
	`example` text NOT NULL,
	`first_seen` integer NOT NULL,
	`last_seen` integer NOT NULL,
	`apps` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `rollups` (
	`id` integer PRIMARY KEY NOT NULL,
	`grain` integer NOT NULL,
	`app` text NOT NULL,
	`bucket` integer NOT NULL,
	`data` text NOT NULL,
	`apps` text NOT NULL,
	`errors` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `rollups_cell` ON `rollups` (`grain`,`app`,`bucket`);--> statement-breakpoint
CREATE INDEX `installs_nsapp_created_at` ON `installs` (`nsapp`,`created_at`);