-- Baton schema version 2: durable jobs.
--
-- One table: available and running rows are reached only through small partial indexes (ready,
-- running-by-lease, running-by-key), so finished rows kept for their retention period do not slow
-- the claim path; the pruner deletes them in bounded batches. See docs/decisions/0005.

CREATE TABLE IF NOT EXISTS ${schema}.job (
    id               bigserial   PRIMARY KEY,
    queue            text        NOT NULL CHECK (queue ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    kind             text        NOT NULL CHECK (length(kind) BETWEEN 1 AND 200),
    payload          jsonb       NOT NULL,
    priority         smallint    NOT NULL CHECK (priority BETWEEN 0 AND 100),
    state            text        NOT NULL CHECK (state IN ('available', 'running', 'succeeded', 'failed', 'cancelled')),
    run_at           timestamptz NOT NULL,
    attempt          int         NOT NULL DEFAULT 0,
    max_attempts     int         NOT NULL CHECK (max_attempts BETWEEN 1 AND 1000),
    timeout_ms       bigint      CHECK (timeout_ms IS NULL OR timeout_ms > 0),
    attempt_token    bigint,
    lease_expires_at timestamptz,
    claimed_by       text,
    concurrency_key  text        CHECK (concurrency_key IS NULL OR length(concurrency_key) BETWEEN 1 AND 200),
    idempotency_key  text        UNIQUE CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 200),
    stall_count      int         NOT NULL DEFAULT 0,
    cancel_requested boolean     NOT NULL DEFAULT false,
    errors           jsonb       NOT NULL DEFAULT '[]',
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempted_at     timestamptz,
    finished_at      timestamptz
);

-- The claim path: ready jobs of one queue in priority, due time, id order.
CREATE INDEX IF NOT EXISTS job_ready ON ${schema}.job (queue, priority, run_at, id) WHERE state = 'available';
-- At most one running job per concurrency key, across all nodes: enforced here, not by hope.
CREATE UNIQUE INDEX IF NOT EXISTS job_running_key ON ${schema}.job (concurrency_key)
    WHERE state = 'running' AND concurrency_key IS NOT NULL;
-- The rescuer's path: running attempts by lease expiry.
CREATE INDEX IF NOT EXISTS job_running_lease ON ${schema}.job (lease_expires_at) WHERE state = 'running';
-- The pruner's path: finished jobs by finish time.
CREATE INDEX IF NOT EXISTS job_finished ON ${schema}.job (finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');

-- Every claim is a new attempt with its own token.
CREATE SEQUENCE IF NOT EXISTS ${schema}.job_attempt_token;

-- Paused queues: their jobs stay available but are not claimed.
CREATE TABLE IF NOT EXISTS ${schema}.job_queue (
    queue      text        PRIMARY KEY,
    paused     boolean     NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
