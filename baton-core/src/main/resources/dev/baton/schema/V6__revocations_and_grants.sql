-- Baton schema version 6: revocation epochs ("log out everywhere") and replay-protected grants.
--
-- Additive only: a node of the previous version keeps working against it.

-- One epoch per subject and scope: revoking bumps it; a grant carries the epoch it was issued under and
-- is refused once the epoch moved on. Rows are per subject (bounded by the subjects ever revoked).
CREATE TABLE IF NOT EXISTS ${schema}.revocation_epoch (
    scope      text        NOT NULL CHECK (length(scope) BETWEEN 1 AND 200),
    subject    text        NOT NULL CHECK (length(subject) BETWEEN 1 AND 200),
    epoch      bigint      NOT NULL CHECK (epoch >= 1),
    revoked_at timestamptz NOT NULL,
    PRIMARY KEY (scope, subject)
);

-- A redeemed grant id: the row is what makes a grant usable once cluster-wide; it lives until the
-- grant's own expiry (after that the grant is refused on its expiry anyway) and is then purged.
CREATE TABLE IF NOT EXISTS ${schema}.grant_redemption (
    purpose     text        NOT NULL CHECK (length(purpose) BETWEEN 1 AND 200),
    grant_id    text        NOT NULL CHECK (length(grant_id) BETWEEN 1 AND 64),
    subject     text        NOT NULL,
    redeemed_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    redeemed_by text,
    PRIMARY KEY (purpose, grant_id)
);
CREATE INDEX IF NOT EXISTS grant_redemption_expiry ON ${schema}.grant_redemption (expires_at);
