CREATE TABLE `copy_marks` (
	`source` text PRIMARY KEY NOT NULL,
	`rejected_id` integer NOT NULL
);
