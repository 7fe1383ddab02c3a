DROP TABLE `held_updates`;--> statement-breakpoint
DROP TABLE `installs`;