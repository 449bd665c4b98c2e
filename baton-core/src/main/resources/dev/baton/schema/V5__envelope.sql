-- Baton schema version 5: correct in the deployments users run (docs/decisions/0012 to 0014).
--
-- Additive only: a node of the previous version keeps working against it.

-- Leases. Every grant takes its generation from one sequence shared by all leases of the schema (and
-- at least the row's previous generation + 1), so generations stay strictly increasing per lease even
-- after a lease row that sat idle past its retention is pruned and later created again.
CREATE SEQUENCE IF NOT EXISTS ${schema}.lease_generation;
SELECT setval('${schema}.lease_generation', greatest(m, 1), m > 0)
  FROM (SELECT greatest((SELECT coalesce(max(generation), 0) FROM ${schema}.lease),
                        (SELECT coalesce(max(generation), 0) FROM ${schema}.lease_history)) AS m) g;

-- Which acquisition holds the lease: a same-owner re-grant (recovering an acquisition whose answer was
-- lost) is allowed only to that acquisition, so two threads, two runners, or two processes that share an
-- owner id exclude each other like any two owners.
ALTER TABLE ${schema}.lease ADD COLUMN IF NOT EXISTS acquisition text;

-- Retention: idle lease rows, ended history rows and departed nodes are pruned by the maintenance leader.
CREATE INDEX IF NOT EXISTS lease_expiry ON ${schema}.lease (expires_at);
CREATE INDEX IF NOT EXISTS lease_history_ended ON ${schema}.lease_history (ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS lease_history_open ON ${schema}.lease_history (acquired_at) WHERE ended_at IS NULL;
CREATE INDEX IF NOT EXISTS node_heartbeat ON ${schema}.node (heartbeat_at);

-- Schedules that cannot fire are recorded, retried with a backoff and reported, never left in the way
-- of healthy ones.
ALTER TABLE ${schema}.schedule
    ADD COLUMN IF NOT EXISTS failing_since timestamptz,
    ADD COLUMN IF NOT EXISTS error_count   int NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS last_error    text,
    ADD COLUMN IF NOT EXISTS retry_at      timestamptz;

-- Available jobs by kind: nodes claim only kinds they handle, and the maintenance leader finds kinds
-- that no live node handles (a loose index scan over this index, not a scan of the queue).
CREATE INDEX IF NOT EXISTS job_available_kind ON ${schema}.job (kind, run_at) WHERE state = 'available';

-- From this version on, each version records the oldest Baton schema version whose code can still run
-- against it, so that an additive migration does not stop older nodes in a rolling deploy.
ALTER TABLE ${schema}.schema_version ADD COLUMN IF NOT EXISTS readable_by int;
