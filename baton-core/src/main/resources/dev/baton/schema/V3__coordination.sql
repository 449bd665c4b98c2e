-- Baton schema version 3: shared replacements for per-instance state (dedupe sets, single-use
-- tokens, concurrency caps, rate limiters). Every row carries its expiry on the database clock and
-- is purged by the maintenance sweep.

-- First receiver of an inbound delivery wins; the row remembers it until expires_at.
CREATE TABLE IF NOT EXISTS ${schema}.inbound_delivery (
    source      text        NOT NULL CHECK (length(source) BETWEEN 1 AND 200),
    delivery_id text        NOT NULL CHECK (length(delivery_id) BETWEEN 1 AND 500),
    received_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    receiver    text,
    PRIMARY KEY (source, delivery_id)
);
CREATE INDEX IF NOT EXISTS inbound_delivery_expiry ON ${schema}.inbound_delivery (expires_at);

-- Only the SHA-256 of a token is stored; consuming deletes the row.
CREATE TABLE IF NOT EXISTS ${schema}.single_use_token (
    token_hash  bytea       PRIMARY KEY CHECK (length(token_hash) = 32),
    purpose     text        NOT NULL CHECK (length(purpose) BETWEEN 1 AND 200),
    subject     text,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS single_use_token_expiry ON ${schema}.single_use_token (expires_at);

-- One row per holder of a capped resource; a holder that dies stops renewing and its row expires.
CREATE TABLE IF NOT EXISTS ${schema}.concurrency_slot (
    cap         text        NOT NULL,
    key         text        NOT NULL,
    holder      text        NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (cap, key, holder)
);
CREATE INDEX IF NOT EXISTS concurrency_slot_expiry ON ${schema}.concurrency_slot (expires_at);

-- GCRA state per limiter key: the theoretical arrival time of the next request.
CREATE TABLE IF NOT EXISTS ${schema}.rate_limit (
    limiter     text        NOT NULL,
    key         text        NOT NULL,
    tat         timestamptz NOT NULL,
    PRIMARY KEY (limiter, key)
);
CREATE INDEX IF NOT EXISTS rate_limit_tat ON ${schema}.rate_limit (tat);
