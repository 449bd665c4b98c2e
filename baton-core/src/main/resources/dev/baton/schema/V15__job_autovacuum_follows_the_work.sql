-- Baton schema version 15: autovacuum visits the job table after a number of dead rows that follows the jobs
-- being run, not the finished jobs being kept.
--
-- Every claim and every completion leaves a dead row version, and an entry in the ready index that points at
-- it; each claim reads the head of that index and steps over those entries until a vacuum removes them.
-- PostgreSQL's default starts autovacuum on a table after 50 + 20 % of its rows have died: with 10^7 finished
-- jobs kept, after 2 million, so claims ran 21 % slower and throughput fell 17 % against a table that keeps
-- none, whose own vacuum came after 200,000 (docs/benchmarks/retention.md, decision 0033). At 1 % the job
-- table is vacuumed after 100,000 dead rows at 10^7 kept, 10,000 at 10^6, and as often as autovacuum's
-- naptime lets it under a steady load; a vacuum then reads only the pages changed since the last one.
--
-- A value an operator has already set on this table is kept. ALTER TABLE ... SET (autovacuum_...) takes a
-- SHARE UPDATE EXCLUSIVE lock: enqueues, claims and completions go on; an autovacuum of the table running at
-- that moment is cancelled by PostgreSQL after deadlock_timeout (one that prevents wraparound is waited for).
-- Code of schema version 13 and later runs unchanged on this schema.
DO $$
BEGIN
    IF NOT EXISTS (
            SELECT 1 FROM pg_class c, unnest(c.reloptions) o
            WHERE c.oid = to_regclass('${schema}.job') AND o LIKE 'autovacuum\_vacuum\_scale\_factor=%') THEN
        EXECUTE 'ALTER TABLE ${schema}.job SET (autovacuum_vacuum_scale_factor = 0.01)';
    END IF;
END $$;
