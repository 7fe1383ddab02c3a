-- Rollup cells of a new layout (docs/decisions/2026-11-27-rollup-cells.md): binary parts whose
-- texts are ids of `rollup_labels`, slices of repo classes only, hour cells for 32 days. Generated
-- by drizzle-kit from src/store/postgres/schema.ts, then written by hand: the old cells are not
-- converted but dropped, and the engine rebuilds the new ones from the executions at start-up (the
-- rollup_version mark below is older than any code's ROLLUP_VERSION); fillfactor 70 as before (a cell written back stays on its page).
CREATE TABLE "rollup_labels" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "rollup_labels_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"label" text NOT NULL
);
--> statement-breakpoint
CREATE INDEX "rollup_labels_label" ON "rollup_labels" USING btree ("label");--> statement-breakpoint
DROP TABLE "rollup_cells";--> statement-breakpoint
CREATE TABLE "rollup_cells" (
	"grain" smallint NOT NULL,
	"slice" text NOT NULL,
	"bucket" bigint NOT NULL,
	"data" bytea NOT NULL,
	"apps" bytea,
	"errors" bytea,
	CONSTRAINT "rollup_cells_grain_slice_bucket_pk" PRIMARY KEY("grain","slice","bucket")
) WITH (fillfactor = 70);
--> statement-breakpoint
CREATE INDEX "rollup_cells_bucket" ON "rollup_cells" USING btree ("grain","bucket");--> statement-breakpoint
INSERT INTO "marks" ("name", "value") VALUES ('rollup_version', 0) ON CONFLICT ("name") DO UPDATE SET "value" = 0;
