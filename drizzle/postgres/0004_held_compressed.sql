ALTER TABLE "held_reports" ADD COLUMN "codec" text;--> statement-breakpoint
ALTER TABLE "held_reports" ADD COLUMN "data" "bytea";