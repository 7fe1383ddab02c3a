CREATE TABLE `issue_links` (
	`signature` text PRIMARY KEY NOT NULL,
	`tracker` text,
	`repo` text,
	`number` integer,
	`url` text,
	`title` text,
	`how` text,
	`linked_at` integer,
	`claimed_by` text,
	`claimed_until` integer
);
