CREATE TABLE `executions` (
	`execution_id` text PRIMARY KEY NOT NULL,
	`random_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`kind` text NOT NULL,
	`payload_version` integer,
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
	`cpu_vendor` text,
	`cpu_model` text,
	`gpu_vendor` text,
	`gpu_model` text,
	`ram_speed` text,
	`gpu_passthrough` text,
	`host_gpu` text,
	`arch` text,
	`platform` text,
	`has_arm` integer,
	`repo_source` text,
	`repo_slug` text,
	`kernel_version` text,
	`app_version` text,
	`extra` text,
	`status` text NOT NULL,
	`outcome` text NOT NULL,
	`error` text,
	`exit_code` integer,
	`error_category` text,
	`failed_command` text,
	`failed_line` integer,
	`install_duration` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`duration_ms` integer,
	`installing_at` integer,
	`validation_at` integer,
	`configuring_at` integer,
	`finished_at` integer,
	`repaired` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
-- Every install becomes its first execution (execution_id = random_id, as for every /upload
-- report). Exit codes and categories are derived, and rollups rebuilt, by the engine at start-up
-- (rollup_state.version is 0 below), since their rules are code, not SQL.
INSERT INTO `executions` (`execution_id`, `random_id`, `attempt`, `kind`, `type`, `ct_type`, `disk_size`, `core_count`, `ram_size`, `os_type`, `os_version`, `disableip6`, `nsapp`, `method`, `pve_version`, `status`, `outcome`, `error`, `created_at`, `updated_at`, `duration_ms`, `installing_at`, `finished_at`, `repaired`)
SELECT `random_id`, `random_id`, 1,
  CASE `type` WHEN 'pve' THEN 'tool' WHEN 'tool' THEN 'tool' WHEN 'addon' THEN 'addon' ELSE 'install' END,
  `type`, `ct_type`, `disk_size`, `core_count`, `ram_size`, `os_type`, `os_version`, `disableip6`, `nsapp`, `method`, `pve_version`, `status`, `outcome`, `error`, `created_at`, `updated_at`, `duration_ms`,
  -- An /upload record is created by its start report.
  `created_at`,
  -- Finished: with a duration, at the update; a final status that came first, at creation; expired or in progress: never.
  CASE WHEN `duration_ms` IS NOT NULL THEN `updated_at` WHEN `outcome` != 'in_progress' AND `updated_at` = `created_at` THEN `created_at` END,
  `repaired`
FROM `installs`;
--> statement-breakpoint
CREATE INDEX `executions_created_at` ON `executions` (`created_at`);--> statement-breakpoint
CREATE INDEX `executions_nsapp_created_at` ON `executions` (`nsapp`,`created_at`);--> statement-breakpoint
CREATE INDEX `executions_random_id` ON `executions` (`random_id`);--> statement-breakpoint
CREATE TABLE `held_reports` (
	`execution_id` text PRIMARY KEY NOT NULL,
	`random_id` text NOT NULL,
	`report` text NOT NULL,
	`received_at` integer NOT NULL,
	`repaired` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE INDEX `held_reports_random_id` ON `held_reports` (`random_id`);--> statement-breakpoint
CREATE INDEX `held_reports_received_at` ON `held_reports` (`received_at`);--> statement-breakpoint
INSERT INTO `held_reports` (`execution_id`, `random_id`, `report`, `received_at`, `repaired`)
SELECT `random_id`, `random_id`,
  json_object('executionId', `random_id`, 'randomId', `random_id`, 'payloadVersion', NULL, 'fields', NULL, 'status', `status`, 'outcome', `outcome`, 'error', `error`,
    'exitCode', NULL, 'errorCategory', NULL, 'failedCommand', NULL, 'failedLine', NULL, 'installDuration', NULL),
  `received_at`, `repaired`
FROM `held_updates`;
--> statement-breakpoint
ALTER TABLE `rollup_state` ADD `version` integer DEFAULT 0 NOT NULL;