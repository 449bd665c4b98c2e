-- Baton schema version 4: recurring schedules with durable next-run state.

CREATE TABLE IF NOT EXISTS ${schema}.schedule (
    name               text        PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 200),
    owner_app          text        NOT NULL,
    spec_kind          text        NOT NULL CHECK (spec_kind IN ('cron', 'interval')),
    spec               text        NOT NULL,
    time_zone          text        NOT NULL,
    job_kind           text        NOT NULL,
    job_queue          text        NOT NULL,
    job_payload        jsonb       NOT NULL,
    job_priority       smallint    NOT NULL,
    job_max_attempts   int         NOT NULL,
    misfire_policy     text        NOT NULL CHECK (misfire_policy IN ('skip', 'run_once', 'catch_up')),
    catch_up_limit     int         NOT NULL DEFAULT 0,
    misfire_threshold_ms bigint    NOT NULL,
    allow_overlap      boolean     NOT NULL DEFAULT false,
    enabled            boolean     NOT NULL DEFAULT true,
    paused             boolean     NOT NULL DEFAULT false,
    -- the app versions that declare this schedule, and the one whose definition is stored
    declared_by        text[]      NOT NULL DEFAULT '{}',
    definition_version text        NOT NULL,
    next_run_at        timestamptz NOT NULL,
    last_due_at        timestamptz,
    last_fired_at      timestamptz,
    last_job_id        bigint,
    misfired_total     bigint      NOT NULL DEFAULT 0,
    last_misfire_at    timestamptz,
    created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    disabled_at        timestamptz
);

CREATE INDEX IF NOT EXISTS schedule_due ON ${schema}.schedule (next_run_at) WHERE enabled AND NOT paused;
