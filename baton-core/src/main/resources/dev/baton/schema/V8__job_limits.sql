-- Baton schema version 8: cluster-wide job limits, enforced at claim time (decision 0019).
--
-- Additive only: a node of version 5 to 7 keeps working against it (it neither reads nor writes the
-- table, and claims as before; it does not enforce the limits either, see docs/job-limits.md). One row
-- per limit, identified by its scope; the claimer of every node reads the rows, so all nodes enforce the
-- same values. A limit applies to the jobs matching its filters (queue, kind: null = any) and, with a
-- metadata key, to each distinct value of that entry separately (jobs without the entry are not limited).
-- Either max_running (holders: running jobs whose attempt lease is live on the database clock) or a rate
-- (rate_starts starts per rate_window_ms, GCRA state in rate_limit under limiter 'baton.job:' || id).
CREATE TABLE IF NOT EXISTS ${schema}.job_limit (
    id             text        PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 600),
    queue          text        CHECK (queue IS NULL OR queue ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    kind           text        CHECK (kind IS NULL OR length(kind) BETWEEN 1 AND 200),
    metadata_key   text        CHECK (metadata_key IS NULL OR length(metadata_key) BETWEEN 1 AND 100),
    max_running    int         CHECK (max_running IS NULL OR max_running >= 1),
    rate_starts    int         CHECK (rate_starts IS NULL OR rate_starts >= 1),
    rate_window_ms bigint      CHECK (rate_window_ms IS NULL OR rate_window_ms >= 1),
    updated_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK ((max_running IS NULL) <> (rate_starts IS NULL)),
    CHECK ((rate_starts IS NULL) = (rate_window_ms IS NULL)),
    CHECK (queue IS NOT NULL OR kind IS NOT NULL OR metadata_key IS NOT NULL)
);
