-- Baton schema version 14: an idempotency key is unique through an index on the keys alone.
--
-- Until now a UNIQUE constraint on job.idempotency_key held one entry per job in its index, NULL for every
-- keyless job (most jobs), and every insert and every update of a job that is not HOT (claim, completion,
-- retry: each changes state) added one more. A unique index WHERE idempotency_key IS NOT NULL holds only the
-- keyed jobs and enforces the same rule, since NULLs never conflicted (decision 0030).
--
-- Code before schema version 13 says ON CONFLICT (idempotency_key) without the predicate, which finds no
-- arbiter under this index: readable_by 13. Upgrade through a release of schema version 13 first.
--
-- Writes wait while the index is built here (CREATE INDEX holds a SHARE lock on the job table for one scan of
-- it). On a large job table, build it beforehand without blocking writes, then migrate; this script keeps it:
--   CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS job_idempotency_key ON <schema>.job (idempotency_key)
--       WHERE idempotency_key IS NOT NULL;
-- An index of that name that is not exactly this one (for instance the invalid leftover of an interrupted
-- concurrent build) is dropped and built again, so the constraint is never dropped before a valid index
-- holds the rule.
DO $$
DECLARE
    found regclass := to_regclass('${schema}.job_idempotency_key');
BEGIN
    IF found IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM pg_index i
            WHERE i.indexrelid = found AND i.indisvalid AND i.indisunique
              AND i.indrelid = to_regclass('${schema}.job')
              AND split_part(pg_get_indexdef(found), ' USING ', 2)
                  = 'btree (idempotency_key) WHERE (idempotency_key IS NOT NULL)') THEN
        EXECUTE 'DROP INDEX ${schema}.job_idempotency_key';
    END IF;
END $$;
CREATE UNIQUE INDEX IF NOT EXISTS job_idempotency_key ON ${schema}.job (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
ALTER TABLE ${schema}.job DROP CONSTRAINT IF EXISTS job_idempotency_key_key;
