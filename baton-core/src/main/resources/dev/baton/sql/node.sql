-- Statements on ${schema}.node, the registry of Baton instances. Times are the database's.
-- Parameters are named (:name); see Sql.

-- name: register
INSERT INTO ${schema}.node AS n (id, started_at, heartbeat_at, heartbeat_interval_ms, state, stopped_at,
                                 protocol_version, host, pid, meta)
VALUES (:id, clock_timestamp(), clock_timestamp(), :heartbeat_interval_ms, 'active', NULL, :protocol_version, :host, :pid,
        :meta::jsonb)
ON CONFLICT (id) DO UPDATE
   SET started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
       heartbeat_interval_ms = excluded.heartbeat_interval_ms, state = 'active', stopped_at = NULL,
       protocol_version = excluded.protocol_version, host = excluded.host, pid = excluded.pid,
       meta = excluded.meta

-- name: heartbeat
-- A stopped node stays stopped: a late heartbeat of a process that was already declared stopped
-- does not bring it back. A missing row (pruned while this node could not beat for longer than the
-- retention, or deleted by hand) is registered again. In the same round trip, the operators' standing
-- controls this node obeys (as control.sql's for_node reads them; schema 12): a 'beat' row with the
-- node's state when the beat was recorded, then one 'control' row per control.
WITH beat AS (
    INSERT INTO ${schema}.node AS n (id, started_at, heartbeat_at, heartbeat_interval_ms, state, stopped_at,
                                     protocol_version, host, pid, meta)
    VALUES (:id, clock_timestamp(), clock_timestamp(), :heartbeat_interval_ms, 'active', NULL, :protocol_version, :host,
            :pid, :meta::jsonb)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = clock_timestamp() WHERE n.state <> 'stopped'
    RETURNING n.state
)
SELECT 'beat' AS kind, state AS action, NULL AS target, NULL AS reason, NULL AS created_by,
       NULL::timestamptz AS created_at
  FROM beat
UNION ALL
SELECT 'control', action, target, reason, created_by, created_at
  FROM ${schema}.control
 WHERE active
   AND ((action = 'drain_node' AND target = :id)
        OR (action = 'retire_version' AND target = :version_target)
        OR action = 'disable_kind')

-- name: set_state
UPDATE ${schema}.node
   SET state = :state, heartbeat_at = clock_timestamp(),
       stopped_at = CASE WHEN :state = 'stopped' THEN clock_timestamp() END
 WHERE id = :id

-- name: live_twin
-- Another process registered under the same id that still looks alive (heartbeat fresh, not stopped):
-- node ids must be unique per process. :instance is this process's instance id.
SELECT host, pid, (extract(epoch FROM clock_timestamp() - heartbeat_at) * 1000)::bigint AS ago_ms
  FROM ${schema}.node
 WHERE id = :id AND state <> 'stopped'
   AND heartbeat_at + 3 * heartbeat_interval_ms * interval '1 millisecond' > clock_timestamp()
   AND meta ->> 'instance' IS DISTINCT FROM :instance

-- name: list
-- One page in id order after a cursor ('' for the first).
SELECT id, started_at, heartbeat_at, heartbeat_interval_ms, state, stopped_at, protocol_version, host, pid,
       meta::text AS meta, meta ->> 'app' AS app, meta ->> 'appVersion' AS app_version, clock_timestamp() AS db_now
  FROM ${schema}.node
 WHERE id > :after
 ORDER BY id
 LIMIT :limit

-- name: get
SELECT id, started_at, heartbeat_at, heartbeat_interval_ms, state, stopped_at, protocol_version, host, pid,
       meta::text AS meta, meta ->> 'app' AS app, meta ->> 'appVersion' AS app_version, clock_timestamp() AS db_now
  FROM ${schema}.node
 WHERE id = :id

-- name: recent
-- The nodes an ownership view shows: every node not stopped, then the most recently stopped ones.
-- The table is bounded by its retention (see prune).
SELECT id, started_at, heartbeat_at, heartbeat_interval_ms, state, stopped_at, protocol_version, host, pid,
       meta::text AS meta, meta ->> 'app' AS app, meta ->> 'appVersion' AS app_version, clock_timestamp() AS db_now
  FROM ${schema}.node
 ORDER BY state = 'stopped', coalesce(stopped_at, heartbeat_at) DESC, id
 LIMIT :limit

-- name: job_settings
-- The job settings maintenance applies: the most conservative of those the live nodes that run a worker
-- declare (the longest retention, the most stalls, the longest unhandled-kind timeout); no row counted
-- when no worker is live.
SELECT count(*) AS workers,
       max((meta -> 'jobs' ->> 'retentionMs')::bigint) AS retention_ms,
       max((meta -> 'jobs' ->> 'maxStalls')::int) AS max_stalls,
       max((meta -> 'jobs' ->> 'unhandledKindTimeoutMs')::bigint) AS unhandled_kind_timeout_ms
  FROM ${schema}.node
 WHERE state <> 'stopped' AND meta -> 'jobs' IS NOT NULL
   AND heartbeat_at + 3 * heartbeat_interval_ms * interval '1 millisecond' > clock_timestamp()

-- name: prune
-- Nodes gone for longer than the retention: stopped that long ago, or silent that long (crashed and
-- never back; default node ids are new at every start). A node is never pruned while it still counts as
-- live (heartbeat within 3 intervals), whatever the retention.
DELETE FROM ${schema}.node WHERE id IN (
    SELECT id FROM ${schema}.node
     WHERE heartbeat_at < (SELECT clock_timestamp()) - :retention_ms * interval '1 millisecond'
       AND (state = 'stopped'
            OR heartbeat_at + 3 * heartbeat_interval_ms * interval '1 millisecond' < (SELECT clock_timestamp()))
     ORDER BY heartbeat_at
     LIMIT :limit)

-- name: db_now
SELECT clock_timestamp() AS db_now
