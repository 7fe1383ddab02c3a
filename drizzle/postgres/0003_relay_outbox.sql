CREATE TABLE "relay_counters" (
	"name" text NOT NULL,
	"shard" smallint NOT NULL,
	"value" bigint NOT NULL,
	CONSTRAINT "relay_counters_name_shard_pk" PRIMARY KEY("name","shard")
);
--> statement-breakpoint
CREATE TABLE "relay_outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "relay_outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"execution_id" text NOT NULL,
	"random_id" text NOT NULL,
	"endpoint" text NOT NULL,
	"body" text NOT NULL,
	"bytes" integer NOT NULL,
	"queued_at" bigint NOT NULL,
	"state" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"lease_owner" text,
	"lease_until" bigint DEFAULT 0 NOT NULL,
	"next_at" bigint DEFAULT 0 NOT NULL,
	"last_error" text
);
--> statement-breakpoint
CREATE INDEX "relay_outbox_execution" ON "relay_outbox" USING btree ("execution_id","id");--> statement-breakpoint
CREATE INDEX "relay_outbox_not_ready" ON "relay_outbox" USING btree ("state") WHERE "relay_outbox"."state" <> 'ready';