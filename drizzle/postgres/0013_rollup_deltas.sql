CREATE TABLE "rollup_deltas" (
	"grain" smallint NOT NULL,
	"slice" text NOT NULL,
	"bucket" bigint NOT NULL,
	"data" "bytea" NOT NULL,
	"apps" "bytea",
	"errors" "bytea"
);
--> statement-breakpoint
CREATE INDEX "rollup_deltas_bucket" ON "rollup_deltas" USING btree ("grain","bucket");--> statement-breakpoint
-- By hand (Drizzle has no table storage parameters): the fold deletes every row soon after it is
-- written, so the table is vacuumed after a fixed number of dead rows, not a share of a live count
-- that stays near zero (reads scan what is left of it).
ALTER TABLE "rollup_deltas" SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000);
