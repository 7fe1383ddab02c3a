CREATE TABLE `alert_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`rule` text NOT NULL,
	`subject` text NOT NULL,
	`status` text NOT NULL,
	`at` integer NOT NULL,
	`message` text NOT NULL,
	`notified_at` integer,
	`held_back` text
);
--> statement-breakpoint
CREATE INDEX `alert_events_at` ON `alert_events` (`at`);--> statement-breakpoint
CREATE INDEX `alert_events_rule` ON `alert_events` (`rule`,`id`);--> statement-breakpoint
CREATE TABLE `alert_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`event_id` integer NOT NULL,
	`channel` text NOT NULL,
	`message` text NOT NULL,
	`created_at` integer NOT NULL,
	`next_at` integer NOT NULL,
	`attempts` integer NOT NULL,
	`state` text NOT NULL,
	`last_error` text,
	`sent_at` integer
);
--> statement-breakpoint
CREATE INDEX `alert_outbox_due` ON `alert_outbox` (`state`,`next_at`);--> statement-breakpoint
CREATE INDEX `alert_outbox_event` ON `alert_outbox` (`event_id`);--> statement-breakpoint
CREATE TABLE `alert_rules` (
	`rule` text PRIMARY KEY NOT NULL,
	`silenced_until` integer,
	`evaluated_at` integer,
	`summary` text
);
--> statement-breakpoint
CREATE TABLE `alert_states` (
	`rule` text NOT NULL,
	`subject` text NOT NULL,
	`status` text NOT NULL,
	`since` integer NOT NULL,
	`event_id` integer NOT NULL,
	`notified` integer NOT NULL,
	`last_sent_at` integer,
	PRIMARY KEY(`rule`, `subject`)
);
