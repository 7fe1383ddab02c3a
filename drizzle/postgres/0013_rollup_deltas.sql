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
--> statement-breakpoint
-- By hand: what a batch does first, in one round trip instead of three (writes.ts runBatch): the
-- fold lock (shared, or alone), the advisory locks of its executions and installs in the order
-- given, then the fold mark, read after the locks are held (each statement of a function sees
-- what was committed before it began).
CREATE FUNCTION installstats_begin(fold_lock bigint, alone boolean, keys bigint[], mark text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  k bigint;
  v bigint;
BEGIN
  IF alone THEN
    PERFORM pg_advisory_xact_lock(fold_lock);
  ELSE
    PERFORM pg_advisory_xact_lock_shared(fold_lock);
  END IF;
  FOREACH k IN ARRAY keys LOOP
    PERFORM pg_advisory_xact_lock(k);
  END LOOP;
  SELECT value INTO v FROM marks WHERE name = mark;
  RETURN coalesce(v, 0);
END
$$;
