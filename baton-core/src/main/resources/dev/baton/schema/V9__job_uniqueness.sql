-- Baton schema version 9: scoped uniqueness at enqueue.
--
-- Additive only: a node of version 5 to 7 keeps working against it (it never reads nor writes the new
-- table). One row per uniqueness key ever enqueued with JobRequest.unique(...): the key's latest job.
-- An enqueue with a key upserts its row first, which row-locks the key until the enqueue's transaction
-- ends: racing enqueues of one key, from any node, run one after the other, and each then looks at
-- the job the previous one left (see docs/decisions/0020). The row of a job that was pruned is deleted
-- by the pruner of a node that knows this table (a node of an older version leaves it: then the next
-- enqueue finds no job and starts afresh).
CREATE TABLE IF NOT EXISTS ${schema}.job_unique (
    unique_key text   PRIMARY KEY CHECK (length(unique_key) BETWEEN 1 AND 200),
    job_id     bigint NOT NULL
);
-- The pruner's path: the key row of a pruned job.
CREATE INDEX IF NOT EXISTS job_unique_job ON ${schema}.job_unique (job_id);
