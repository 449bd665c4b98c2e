-- Baton schema version 11: strict FIFO per concurrency key (JobRequest.concurrencyKey(key, KeyOrder.FIFO)).
--
-- key_fifo: the job runs only when no older job (lower id) of its concurrency key is still available,
-- whether due or waiting for its run-at, a retry or a snooze; so a retried job keeps its place ahead of
-- newer jobs of its key. Set only with a concurrency key. Nodes of versions 5 to 10 neither write nor read
-- it: their jobs have false (the column's default) and their claims ignore it.
ALTER TABLE ${schema}.job ADD COLUMN IF NOT EXISTS key_fifo boolean NOT NULL DEFAULT false;

-- The claim's "older job of my key still waiting?" probe: available keyed rows only, a small index like
-- job_ready.
CREATE INDEX IF NOT EXISTS job_waiting_key ON ${schema}.job (concurrency_key, id)
    WHERE state = 'available' AND concurrency_key IS NOT NULL;
