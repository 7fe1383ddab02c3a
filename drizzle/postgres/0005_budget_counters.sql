-- The budgets' running totals (src/store/shared/budgets.ts), from the rows already stored: log
-- entries and held reports written before this migration cost what a new one would (row, texts
-- and body), and the counters start at their sums, so they stay equal to a recount from here on.
UPDATE rejected_reports SET cost = 64 + char_length(message) + coalesce(char_length(field), 0) + coalesce(char_length(random_id), 0)
  + CASE WHEN body_store = 'shared' THEN 0 ELSE octet_length(body) END;--> statement-breakpoint
UPDATE held_reports SET cost = 64 + char_length(execution_id) + char_length(random_id) + char_length(report) + coalesce(octet_length(data), 0);--> statement-breakpoint
INSERT INTO budget_counters (name, value)
SELECT name, value FROM (VALUES
  ('log.entries', (SELECT count(*) FROM rejected_reports)),
  ('log.head_entries', (SELECT count(*) FROM rejected_reports WHERE body_store = 'head')),
  ('log.body_bytes', (SELECT coalesce(sum(octet_length(data)), 0) FROM bodies)),
  ('log.body_raw_bytes', (SELECT coalesce(sum(size), 0) FROM bodies)),
  ('log.bytes', (SELECT coalesce(sum(cost), 0) FROM rejected_reports) + (SELECT coalesce(sum(octet_length(data)), 0) FROM bodies)),
  ('held.count', (SELECT count(*) FROM held_reports)),
  ('held.bytes', (SELECT coalesce(sum(cost), 0) FROM held_reports))
) AS totals (name, value)
ON CONFLICT (name) DO UPDATE SET value = excluded.value;
