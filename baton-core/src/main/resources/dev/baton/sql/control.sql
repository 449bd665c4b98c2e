-- Statements on ${schema}.control, the operators' controls and their audit log (schema 12).
-- Parameters are named (:name); see Sql.

-- name: issue
-- A standing control (drain_node, retire_version, disable_kind): created unless the same one is already in
-- force, in which case nothing is written and the one in force is returned by find_standing.
INSERT INTO ${schema}.control (action, target, active, reason, created_by)
VALUES (:action, :target, true, :reason, :actor)
ON CONFLICT (action, target) WHERE active DO NOTHING
RETURNING id, action, target, active, reason, detail, created_by, created_at, lifted_by, lifted_at

-- name: find_standing
SELECT id, action, target, active, reason, detail, created_by, created_at, lifted_by, lifted_at
  FROM ${schema}.control
 WHERE action = :action AND target = :target AND active

-- name: lift
-- Ends a standing control; the row stays, as the record of who lifted it and when.
UPDATE ${schema}.control
   SET active = false, lifted_by = :actor, lifted_at = clock_timestamp()
 WHERE action = :action AND target = :target AND active
RETURNING id, action, target, active, reason, detail, created_by, created_at, lifted_by, lifted_at

-- name: record
-- A one-shot action, recorded as done (active false from the start).
INSERT INTO ${schema}.control (action, target, active, reason, detail, created_by)
VALUES (:action, :target, false, :reason, :detail, :actor)
RETURNING id, action, target, active, reason, detail, created_by, created_at, lifted_by, lifted_at

-- name: for_node
-- The standing controls a node obeys, read with every heartbeat: a drain of this node, a retirement of
-- its application version (:version_target, 'app@version'), and the disabled job kinds.
SELECT action, target, reason, created_by, created_at
  FROM ${schema}.control
 WHERE active
   AND ((action = 'drain_node' AND target = :node_id)
        OR (action = 'retire_version' AND target = :version_target)
        OR action = 'disable_kind')
 ORDER BY id

-- name: standing
SELECT id, action, target, active, reason, detail, created_by, created_at, lifted_by, lifted_at
  FROM ${schema}.control
 WHERE active
 ORDER BY id

-- name: audit
-- The log, newest first, one page before a cursor (an id; a very large one for the first page).
SELECT id, action, target, active, reason, detail, created_by, created_at, lifted_by, lifted_at
  FROM ${schema}.control
 WHERE id < :before
 ORDER BY id DESC
 LIMIT :limit

-- name: expire_lease
-- Ends a lease's current term now, if it is still the term the operator saw (:generation): the holder's
-- fenced writes fail from this commit on and its next renewal finds the lease lost; a candidate may
-- take the lease (at the next generation) at once. A fenced write in flight holds the row FOR SHARE:
-- this statement waits for it. The term's history row is closed as expired.
WITH expired AS (
    UPDATE ${schema}.lease
       SET expires_at = clock_timestamp()
     WHERE name = :name AND generation = :generation AND owner_id IS NOT NULL AND expires_at > clock_timestamp()
    RETURNING name, generation, owner_id
), ended AS (
    UPDATE ${schema}.lease_history h
       SET ended_at = clock_timestamp(), end_reason = 'expired'
      FROM expired e
     WHERE h.name = e.name AND h.generation = e.generation AND h.ended_at IS NULL
)
SELECT owner_id, generation, pg_notify(:channel, name) IS NULL AS notified FROM expired

-- name: prune
-- The record of controls that ended (lifted, or one-shot) longer than the retention ago; standing controls
-- stay however old they are. Oldest first, bounded.
DELETE FROM ${schema}.control WHERE id IN (
    SELECT id FROM ${schema}.control
     WHERE NOT active AND coalesce(lifted_at, created_at) < clock_timestamp() - :retention_ms * interval '1 millisecond'
     ORDER BY id
     LIMIT :limit)
