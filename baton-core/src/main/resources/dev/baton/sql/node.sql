-- Statements on ${schema}.node, the registry of Baton instances. Times are the database's.

-- name: register
-- Parameters: id, heartbeat_interval_ms, protocol_version, host, pid, meta.
INSERT INTO ${schema}.node AS n (id, started_at, heartbeat_at, heartbeat_interval_ms, state, stopped_at,
                                 protocol_version, host, pid, meta)
VALUES (?, clock_timestamp(), clock_timestamp(), ?, 'active', NULL, ?, ?, ?, ?::jsonb)
ON CONFLICT (id) DO UPDATE
   SET started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
       heartbeat_interval_ms = excluded.heartbeat_interval_ms, state = 'active', stopped_at = NULL,
       protocol_version = excluded.protocol_version, host = excluded.host, pid = excluded.pid,
       meta = excluded.meta

-- name: heartbeat
-- A stopped node stays stopped: a late heartbeat of a process that was already declared stopped
-- does not bring it back. Parameters: id.
UPDATE ${schema}.node SET heartbeat_at = clock_timestamp() WHERE id = ? AND state <> 'stopped'
RETURNING state

-- name: set_state
-- Parameters: state, state, id.
UPDATE ${schema}.node
   SET state = ?, heartbeat_at = clock_timestamp(),
       stopped_at = CASE WHEN ? = 'stopped' THEN clock_timestamp() END
 WHERE id = ?

-- name: list
SELECT id, started_at, heartbeat_at, heartbeat_interval_ms, state, stopped_at, protocol_version, host, pid,
       meta::text AS meta, clock_timestamp() AS db_now
  FROM ${schema}.node
 ORDER BY id
