CREATE TABLE `held_updates` (
	`random_id` text PRIMARY KEY NOT NULL,
	`status` text NOT NULL,
	`outcome` text NOT NULL,
	`error` text,
	`received_at` integer NOT NULL,
	`repaired` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE `installs` (
	`random_id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`ct_type` integer,
	`disk_size` real,
	`core_count` integer,
	`ram_size` integer,
	`os_type` text,
	`os_version` text,
	`disableip6` text,
	`nsapp` text,
	`method` text,
	`pve_version` text,
	`status` text NOT NULL,
	`outcome` text NOT NULL,
	`error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`duration_ms` integer,
	`repaired` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE INDEX `installs_created_at` ON `installs` (`created_at`);--> statement-breakpoint
CREATE TABLE `rejected_reports` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`received_at` integer NOT NULL,
	`endpoint` text NOT NULL,
	`reason` text NOT NULL,
	`http_status` integer NOT NULL,
	`field` text,
	`message` text NOT NULL,
	`random_id` text,
	`body` blob NOT NULL
);
--> statement-breakpoint
CREATE INDEX `rejected_reports_received_at` ON `rejected_reports` (`received_at`);