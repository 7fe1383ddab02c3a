-- Takes the transaction-scoped advisory locks `keys` in the order given (the writer sorts them):
-- a batch locks every execution and install it touches before reading them, and two nodes'
-- batches never wait on each other in a cycle.
CREATE FUNCTION installstats_lock_all(keys bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  k bigint;
BEGIN
  FOREACH k IN ARRAY keys LOOP
    PERFORM pg_advisory_xact_lock(k);
  END LOOP;
END
$$;
