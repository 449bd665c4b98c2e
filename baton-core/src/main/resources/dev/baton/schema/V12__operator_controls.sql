-- Baton schema version 12: operator controls, applied through the database and recorded.
--
-- One row per control an operator issued (Controls): drain a node, retire an application version,
-- disable a job kind (standing controls: active until lifted), or a one-shot action (expire a lease,
-- pause or resume a schedule). The rows are the audit log: who, when, what, why, and who lifted a
-- standing control when. Nodes read the standing controls that concern them with every heartbeat;
-- nodes of versions before 12 do not read them (controls hold once every node runs this version).
CREATE TABLE IF NOT EXISTS ${schema}.control (
    id          bigserial   PRIMARY KEY,
    action      text        NOT NULL CHECK (action IN ('drain_node', 'retire_version', 'disable_kind',
                                                       'expire_lease', 'pause_schedule', 'resume_schedule')),
    target      text        NOT NULL CHECK (length(target) BETWEEN 1 AND 401),
    active      boolean     NOT NULL,
    reason      text        CHECK (reason IS NULL OR length(reason) <= 2000),
    detail      text        CHECK (detail IS NULL OR length(detail) <= 2000),
    created_by  text        NOT NULL CHECK (length(created_by) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    lifted_by   text        CHECK (lifted_by IS NULL OR length(lifted_by) BETWEEN 1 AND 200),
    lifted_at   timestamptz
);

-- At most one standing control per action and target: two operators draining one node at once make
-- one control (the second finds the first).
CREATE UNIQUE INDEX IF NOT EXISTS control_standing ON ${schema}.control (action, target) WHERE active;
