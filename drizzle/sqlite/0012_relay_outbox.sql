CREATE TABLE `relay_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`execution_id` text NOT NULL,
	`random_id` text NOT NULL,
	`endpoint` text NOT NULL,
	`body` text NOT NULL,
	`bytes` integer NOT NULL,
	`queued_at` integer NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`lease_owner` text,
	`lease_until` integer DEFAULT 0 NOT NULL,
	`next_at` integer DEFAULT 0 NOT NULL,
	`last_error` text
);
--> statement-breakpoint
CREATE INDEX `relay_outbox_execution` ON `relay_outbox` (`execution_id`);--> statement-breakpoint
CREATE INDEX `relay_outbox_not_ready` ON `relay_outbox` (`state`) WHERE "relay_outbox"."state" <> 'ready';