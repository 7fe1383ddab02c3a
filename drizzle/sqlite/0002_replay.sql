ALTER TABLE `rejected_reports` ADD `replayed_at` integer;--> statement-breakpoint
ALTER TABLE `rejected_reports` ADD `replay_result` text;