CREATE TABLE "bodies" (
	"hash" text PRIMARY KEY NOT NULL,
	"size" integer NOT NULL,
	"codec" text NOT NULL,
	"data" "bytea" NOT NULL,
	"refs" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "budget_counters" (
	"name" text PRIMARY KEY NOT NULL,
	"value" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "error_signatures" (
	"id" text PRIMARY KEY NOT NULL,
	"signature" text NOT NULL,
	"example" text NOT NULL,
	"first_seen" bigint NOT NULL,
	"last_seen" bigint NOT NULL,
	"apps" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "executions" (
	"execution_id" text PRIMARY KEY NOT NULL,
	"random_id" text NOT NULL,
	"attempt" integer NOT NULL,
	"kind" text NOT NULL,
	"payload_version" integer,
	"type" text NOT NULL,
	"ct_type" integer,
	"disk_size" double precision,
	"core_count" integer,
	"ram_size" integer,
	"os_type" text,
	"os_version" text,
	"disableip6" text,
	"nsapp" text,
	"method" text,
	"pve_version" text,
	"cpu_vendor" text,
	"cpu_model" text,
	"gpu_vendor" text,
	"gpu_model" text,
	"ram_speed" text,
	"gpu_passthrough" text,
	"host_gpu" text,
	"arch" text,
	"platform" text,
	"has_arm" boolean,
	"repo_source" text,
	"repo_slug" text,
	"kernel_version" text,
	"app_version" text,
	"extra" text,
	"status" text NOT NULL,
	"outcome" text NOT NULL,
	"error" text,
	"exit_code" integer,
	"error_category" text,
	"failed_command" text,
	"failed_line" integer,
	"install_duration" integer,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"duration_ms" bigint,
	"installing_at" bigint,
	"validation_at" bigint,
	"configuring_at" bigint,
	"finished_at" bigint,
	"repaired" boolean DEFAULT false NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "executions_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1)
);
--> statement-breakpoint
CREATE TABLE "held_reports" (
	"execution_id" text PRIMARY KEY NOT NULL,
	"random_id" text NOT NULL,
	"report" text NOT NULL,
	"received_at" bigint NOT NULL,
	"repaired" boolean DEFAULT false NOT NULL,
	"cost" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "marks" (
	"name" text PRIMARY KEY NOT NULL,
	"value" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rejected_reports" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "rejected_reports_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"received_at" bigint NOT NULL,
	"endpoint" text NOT NULL,
	"reason" text NOT NULL,
	"result" text,
	"field" text,
	"message" text NOT NULL,
	"random_id" text,
	"body" "bytea" NOT NULL,
	"replayed_at" bigint,
	"replay_result" text,
	"body_store" text DEFAULT 'inline' NOT NULL,
	"body_size" integer NOT NULL,
	"body_hash" text,
	"cost" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rollup_counts" (
	"grain" smallint NOT NULL,
	"slice" text NOT NULL,
	"bucket" bigint NOT NULL,
	"dim" text NOT NULL,
	"value" text NOT NULL,
	"c0" bigint NOT NULL,
	"c1" bigint NOT NULL,
	"c2" bigint NOT NULL,
	"c3" bigint NOT NULL,
	"c4" bigint NOT NULL,
	CONSTRAINT "rollup_counts_grain_slice_bucket_dim_value_pk" PRIMARY KEY("grain","slice","bucket","dim","value")
);
--> statement-breakpoint
CREATE TABLE "rollup_durations" (
	"grain" smallint NOT NULL,
	"slice" text NOT NULL,
	"bucket" bigint NOT NULL,
	"outcome" text NOT NULL,
	"bin" smallint NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "rollup_durations_grain_slice_bucket_outcome_bin_pk" PRIMARY KEY("grain","slice","bucket","outcome","bin")
);
--> statement-breakpoint
CREATE TABLE "rollup_errors" (
	"grain" smallint NOT NULL,
	"slice" text NOT NULL,
	"bucket" bigint NOT NULL,
	"signature" text NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "rollup_errors_grain_slice_bucket_signature_pk" PRIMARY KEY("grain","slice","bucket","signature")
);
--> statement-breakpoint
CREATE INDEX "executions_created_at" ON "executions" USING btree ("created_at","seq");--> statement-breakpoint
CREATE INDEX "executions_nsapp_created_at" ON "executions" USING btree ("nsapp","created_at","seq");--> statement-breakpoint
CREATE INDEX "executions_random_id" ON "executions" USING btree ("random_id");--> statement-breakpoint
CREATE INDEX "held_reports_random_id" ON "held_reports" USING btree ("random_id");--> statement-breakpoint
CREATE INDEX "held_reports_received_at" ON "held_reports" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "rejected_reports_received_at" ON "rejected_reports" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "rejected_reports_head" ON "rejected_reports" USING btree ("id") WHERE "rejected_reports"."body_store" = 'head';--> statement-breakpoint
CREATE INDEX "rollup_counts_bucket" ON "rollup_counts" USING btree ("grain","bucket");