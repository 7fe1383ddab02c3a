ALTER TABLE `rejected_reports` ADD `result` text;
--> statement-breakpoint
-- The HTTP status is derived from reason and result now. A repaired entry's message ends with
-- what its write came to ("body repaired (...) and created"): its last word is the result.
UPDATE `rejected_reports` SET `result` = substr(`message`, length(rtrim(`message`, 'abcdefghijklmnopqrstuvwxyz')) + 1) WHERE `reason` = 'repaired';
--> statement-breakpoint
ALTER TABLE `rejected_reports` DROP COLUMN `http_status`;
