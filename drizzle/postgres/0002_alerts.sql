CREATE TABLE "alert_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "alert_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"rule" text NOT NULL,
	"subject" text NOT NULL,
	"status" text NOT NULL,
	"at" bigint NOT NULL,
	"message" text NOT NULL,
	"notified_at" bigint,
	"held_back" text
);
--> statement-breakpoint
CREATE TABLE "alert_outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "alert_outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"event_id" bigint NOT NULL,
	"channel" text NOT NULL,
	"message" text NOT NULL,
	"created_at" bigint NOT NULL,
	"next_at" bigint NOT NULL,
	"attempts" integer NOT NULL,
	"state" text NOT NULL,
	"last_error" text,
	"sent_at" bigint
);
--> statement-breakpoint
CREATE TABLE "alert_rules" (
	"rule" text PRIMARY KEY NOT NULL,
	"silenced_until" bigint,
	"evaluated_at" bigint,
	"summary" text
);
--> statement-breakpoint
CREATE TABLE "alert_states" (
	"rule" text NOT NULL,
	"subject" text NOT NULL,
	"status" text NOT NULL,
	"since" bigint NOT NULL,
	"event_id" bigint NOT NULL,
	"notified" boolean NOT NULL,
	"last_sent_at" bigint,
	CONSTRAINT "alert_states_rule_subject_pk" PRIMARY KEY("rule","subject")
);
--> statement-breakpoint
CREATE INDEX "alert_events_at" ON "alert_events" USING btree ("at");--> statement-breakpoint
CREATE INDEX "alert_events_rule" ON "alert_events" USING btree ("rule","id");--> statement-breakpoint
CREATE INDEX "alert_outbox_due" ON "alert_outbox" USING btree ("state","next_at");--> statement-breakpoint
CREATE INDEX "alert_outbox_event" ON "alert_outbox" USING btree ("event_id");