CREATE TABLE `expiry_state` (
	`id` integer PRIMARY KEY NOT NULL,
	`checked_until` integer NOT NULL
);
--> statement-breakpoint
-- Nothing before the oldest install still in progress needs checking (found with the index
-- about to go); with none in progress, nothing before the newest install does.
INSERT INTO `expiry_state` (`id`, `checked_until`) VALUES (1, coalesce((SELECT min(`created_at`) FROM `installs` WHERE outcome = 'in_progress'), (SELECT max(`created_at`) + 1 FROM `installs`), 0));
--> statement-breakpoint
DROP INDEX `installs_in_progress`;
