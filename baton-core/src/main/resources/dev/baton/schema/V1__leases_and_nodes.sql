-- Baton schema version 1: fenced leases, their ownership history, and the node registry.
--
-- ${schema} is the Baton schema (default "baton"). Baton's migrator substitutes a validated,
-- quoted identifier; Flyway users set the placeholder `schema` (Flyway's ${...} syntax is the same).

-- A lease row is never deleted: release clears owner_id, so generation never goes back.
CREATE TABLE IF NOT EXISTS ${schema}.lease (
    name        text        PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 200),
    owner_id    text        CHECK (owner_id IS NULL OR length(owner_id) BETWEEN 1 AND 200),
    generation  bigint      NOT NULL CHECK (generation >= 1),
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    owner_meta  jsonb
);

-- One row per generation: who held it, from when, until when and why it ended.
CREATE TABLE IF NOT EXISTS ${schema}.lease_history (
    name        text        NOT NULL,
    generation  bigint      NOT NULL,
    owner_id    text        NOT NULL,
    acquired_at timestamptz NOT NULL,
    ended_at    timestamptz,
    end_reason  text        CHECK (end_reason IN ('released', 'expired')),
    PRIMARY KEY (name, generation)
);

CREATE TABLE IF NOT EXISTS ${schema}.node (
    id                    text        PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 200),
    started_at            timestamptz NOT NULL,
    heartbeat_at          timestamptz NOT NULL,
    heartbeat_interval_ms bigint      NOT NULL CHECK (heartbeat_interval_ms > 0),
    state                 text        NOT NULL CHECK (state IN ('active', 'draining', 'stopped')),
    stopped_at            timestamptz,
    protocol_version      int         NOT NULL,
    host                  text,
    pid                   bigint,
    meta                  jsonb
);
