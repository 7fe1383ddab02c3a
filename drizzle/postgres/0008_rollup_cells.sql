-- Rollup cells instead of counter rows (docs/decisions.md, "Rollup cells on PostgreSQL"): one row
-- per (grain, slice, bucket) with the three JSON columns of domain/rollup.ts toColumns. Generated
-- by drizzle-kit from src/store/postgres/schema.ts, then written by hand: the counter rows of an
-- existing database are gathered into cells (zero counts left out, as readers skipped them)
-- before their tables go, and the table gets fillfactor 70 (a cell written back stays on its page).
CREATE TABLE "rollup_cells" (
	"grain" smallint NOT NULL,
	"slice" text NOT NULL,
	"bucket" bigint NOT NULL,
	"data" text NOT NULL,
	"apps" text NOT NULL,
	"errors" text NOT NULL,
	CONSTRAINT "rollup_cells_grain_slice_bucket_pk" PRIMARY KEY("grain","slice","bucket")
) WITH (fillfactor = 70);
--> statement-breakpoint
INSERT INTO "rollup_cells" ("grain", "slice", "bucket", "data", "apps", "errors")
SELECT k."grain", k."slice", k."bucket",
	json_build_object('dims', coalesce(d."dims", '{}'::json), 'dur', coalesce(u."dur", '{}'::json))::text,
	coalesce(a."apps", '{}'::json)::text,
	coalesce(e."errors", '{}'::json)::text
FROM (SELECT DISTINCT "grain", "slice", "bucket" FROM "rollup_counts" WHERE "c0" <> 0 OR "c1" <> 0 OR "c2" <> 0 OR "c3" <> 0 OR "c4" <> 0) k
LEFT JOIN (
	SELECT "grain", "slice", "bucket", json_object_agg("dim", "values") AS "dims" FROM (
		SELECT "grain", "slice", "bucket", "dim", json_object_agg("value", json_build_array("c0", "c1", "c2", "c3", "c4")) AS "values"
		FROM "rollup_counts" WHERE "dim" <> 'nsapp' AND ("c0" <> 0 OR "c1" <> 0 OR "c2" <> 0 OR "c3" <> 0 OR "c4" <> 0)
		GROUP BY "grain", "slice", "bucket", "dim") x
	GROUP BY "grain", "slice", "bucket") d USING ("grain", "slice", "bucket")
LEFT JOIN (
	SELECT "grain", "slice", "bucket", json_object_agg("value", json_build_array("c0", "c1", "c2", "c3", "c4")) AS "apps"
	FROM "rollup_counts" WHERE "dim" = 'nsapp' AND ("c0" <> 0 OR "c1" <> 0 OR "c2" <> 0 OR "c3" <> 0 OR "c4" <> 0)
	GROUP BY "grain", "slice", "bucket") a USING ("grain", "slice", "bucket")
LEFT JOIN (
	SELECT "grain", "slice", "bucket", json_object_agg("outcome", "bins") AS "dur" FROM (
		SELECT "grain", "slice", "bucket", "outcome", json_object_agg("bin"::text, "n") AS "bins"
		FROM "rollup_durations" WHERE "n" <> 0 GROUP BY "grain", "slice", "bucket", "outcome") y
	GROUP BY "grain", "slice", "bucket") u USING ("grain", "slice", "bucket")
LEFT JOIN (
	SELECT "grain", "slice", "bucket", json_object_agg("signature", "n") AS "errors"
	FROM "rollup_errors" WHERE "n" <> 0 GROUP BY "grain", "slice", "bucket") e USING ("grain", "slice", "bucket");
--> statement-breakpoint
DROP TABLE "rollup_counts" CASCADE;--> statement-breakpoint
DROP TABLE "rollup_durations" CASCADE;--> statement-breakpoint
DROP TABLE "rollup_errors" CASCADE;--> statement-breakpoint
CREATE INDEX "rollup_cells_bucket" ON "rollup_cells" USING btree ("grain","bucket");
