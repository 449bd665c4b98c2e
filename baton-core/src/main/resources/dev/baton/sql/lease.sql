-- Statements on ${schema}.lease and ${schema}.lease_history. Every time is the database's
-- clock_timestamp(): never now() (the transaction start) and never the application's clock.
-- TTLs are bound as milliseconds. Parameters are named (:name); see Sql.

-- name: acquire
-- Takes a free or expired lease, or creates it, or re-grants it to the acquisition that holds it (an
-- acquisition retried after its answer was lost: the statement may have committed). The re-grant is
-- only for that same acquisition, never for another caller with the same owner id: two threads, two
-- runners or two processes sharing an owner id exclude each other like any two owners. Every grant gets
-- a new generation, strictly higher than the row's previous one and drawn from a sequence shared by
-- every lease of the schema, so generations never repeat even after an idle row is pruned and created
-- again; an attempt that takes nothing draws nothing. A lease that looks free or expired is locked first
-- (FOR UPDATE): if another transaction holds the row (a fenced write under FOR SHARE, a renewal), this
-- waits, re-checks on the newest row version (Read Committed), and only then computes the new times, so
-- they are taken after the wait. A lease that is held is answered at once, without waiting. A row
-- inserted by a racing first acquisition after this statement's snapshot makes it take nothing (the
-- caller tries again).
WITH p AS (
    SELECT :name::text AS name, :owner_id::text AS owner_id, :ttl_ms::bigint AS ttl_ms, :owner_meta::jsonb AS owner_meta,
           :acquisition::text AS acquisition
), free AS (
    SELECT l.name, l.generation
      FROM ${schema}.lease l, p
     WHERE l.name = p.name
       AND (l.owner_id IS NULL OR l.expires_at <= clock_timestamp()
            OR (l.owner_id = p.owner_id AND l.acquisition = p.acquisition))
       FOR UPDATE OF l
), updated AS (
    UPDATE ${schema}.lease l
       SET owner_id    = p.owner_id,
           generation  = greatest(nextval('${schema}.lease_generation'), f.generation + 1),
           acquired_at = clock_timestamp(),
           renewed_at  = clock_timestamp(),
           expires_at  = clock_timestamp() + p.ttl_ms * interval '1 millisecond',
           owner_meta  = p.owner_meta,
           acquisition = p.acquisition
      FROM p, free f
     WHERE l.name = f.name
    RETURNING l.name, l.owner_id, l.generation, l.acquired_at, l.expires_at
), inserted AS (
    INSERT INTO ${schema}.lease (name, owner_id, generation, acquired_at, renewed_at, expires_at, owner_meta,
                                 acquisition)
    SELECT p.name, p.owner_id, nextval('${schema}.lease_generation'), clock_timestamp(), clock_timestamp(),
           clock_timestamp() + p.ttl_ms * interval '1 millisecond', p.owner_meta, p.acquisition
      FROM p
     WHERE NOT EXISTS (SELECT 1 FROM ${schema}.lease l WHERE l.name = p.name)
    ON CONFLICT (name) DO NOTHING
    RETURNING name, owner_id, generation, acquired_at, expires_at
), acquired AS (
    SELECT * FROM updated UNION ALL SELECT * FROM inserted
), ended AS (
    UPDATE ${schema}.lease_history h
       SET ended_at = a.acquired_at, end_reason = 'expired'
      FROM acquired a
     WHERE h.name = a.name AND h.generation < a.generation AND h.ended_at IS NULL
), recorded AS (
    INSERT INTO ${schema}.lease_history (name, generation, owner_id, acquired_at)
    SELECT name, generation, owner_id, acquired_at FROM acquired
)
SELECT true AS acquired, owner_id, generation, acquired_at, expires_at, clock_timestamp() AS db_now FROM acquired
UNION ALL
SELECT false, l.owner_id, l.generation, l.acquired_at, l.expires_at, clock_timestamp()
  FROM ${schema}.lease l, p
 WHERE l.name = p.name AND NOT EXISTS (SELECT 1 FROM acquired)

-- name: renew
-- Extends the lease only for its current owner and generation, and only while it has not expired:
-- a renewal never resurrects an expired lease, so it cannot race a takeover into two owners.
UPDATE ${schema}.lease
   SET renewed_at = clock_timestamp(),
       expires_at = clock_timestamp() + :ttl_ms * interval '1 millisecond'
 WHERE name = :name AND owner_id = :owner_id AND generation = :generation AND expires_at > clock_timestamp()
RETURNING expires_at, clock_timestamp() AS db_now

-- name: release
-- Clears the owner (the row and its generation stay), closes the history row and wakes waiting
-- candidates with a notification on the lease channel (delivered at commit).
WITH released AS (
    UPDATE ${schema}.lease
       SET owner_id = NULL, owner_meta = NULL, expires_at = clock_timestamp()
     WHERE name = :name AND owner_id = :owner_id AND generation = :generation
    RETURNING name, generation
), ended AS (
    UPDATE ${schema}.lease_history h
       SET ended_at = clock_timestamp(), end_reason = 'released'
      FROM released r
     WHERE h.name = r.name AND h.generation = r.generation AND h.ended_at IS NULL
)
SELECT pg_notify(:channel, r.name) FROM released r

-- name: close_history
-- Closes earlier generations left open (see LeaseStore#closeEarlierHistory).
UPDATE ${schema}.lease_history h
   SET ended_at = coalesce((SELECT min(n.acquired_at) FROM ${schema}.lease_history n
                             WHERE n.name = h.name AND n.generation > h.generation), clock_timestamp()),
       end_reason = 'expired'
 WHERE h.name = :name AND h.generation < :generation AND h.ended_at IS NULL

-- name: fence
-- The fence of every protected write: run inside the write's transaction. FOR SHARE locks the
-- lease row until commit, so a takeover (an UPDATE of this row) waits for the write to commit or
-- roll back; under Read Committed a row changed by a committed takeover is re-read and fails the
-- check. A plain subquery would read the snapshot and let a stale write through.
-- The second column bounds how long this transaction may sit idle holding the lock (a paused
-- writer must not block a takeover forever): set_config(..., true) is transaction-local.
-- The idle bound is the time the lease has left when the fence runs (at least 1 ms): a writer that
-- pauses right after the fence is ended by the server about when its lease expires; one that pauses
-- later is ended that long after its last statement (docs/decisions/0012).
SELECT l.generation,
       set_config('idle_in_transaction_session_timeout',
                  greatest(1, ceil(extract(epoch FROM l.expires_at - clock_timestamp()) * 1000))::bigint || 'ms', true)
  FROM ${schema}.lease l
 WHERE l.name = :name AND l.owner_id = :owner_id AND l.generation = :generation AND l.expires_at > clock_timestamp()
   FOR SHARE OF l

-- name: inspect
SELECT name, owner_id, generation, acquired_at, renewed_at, expires_at, owner_meta::text AS owner_meta,
       clock_timestamp() AS db_now
  FROM ${schema}.lease
 WHERE name = :name

-- name: list
-- One page in name order after a cursor ('' for the first).
SELECT name, owner_id, generation, acquired_at, renewed_at, expires_at, owner_meta::text AS owner_meta,
       clock_timestamp() AS db_now
  FROM ${schema}.lease
 WHERE name > :after
 ORDER BY name
 LIMIT :limit

-- name: held
-- Leases held right now (unexpired, with an owner): a range of the expiry index, however many idle
-- rows the table keeps ((SELECT clock_timestamp()) is evaluated once, so it can bound the index scan);
-- then in name order.
SELECT * FROM (
    SELECT name, owner_id, generation, acquired_at, renewed_at, expires_at, owner_meta::text AS owner_meta,
           clock_timestamp() AS db_now
      FROM ${schema}.lease
     WHERE expires_at > (SELECT clock_timestamp()) AND owner_id IS NOT NULL
     ORDER BY expires_at
     LIMIT :limit) h
 ORDER BY name

-- name: prune
-- Lease rows idle (released, or expired and not renewed) for longer than the retention: deleting them
-- is safe because a later grant of the same name draws its generation from the shared sequence, so it
-- is higher than any generation this row ever had. A row whose generation is above the sequence (set by
-- a node of an older version, which counted per row) is kept, and nothing is pruned while a node of a
-- version before the sequence is live (its node row says no kinds): it would create a pruned name again
-- at generation 1.
DELETE FROM ${schema}.lease WHERE name IN (
    SELECT name FROM ${schema}.lease
     WHERE expires_at < (SELECT clock_timestamp()) - :retention_ms * interval '1 millisecond'
       AND generation <= (SELECT last_value FROM ${schema}.lease_generation)
       AND NOT EXISTS (SELECT 1 FROM ${schema}.node n
                        WHERE n.state <> 'stopped' AND n.meta -> 'kinds' IS NULL
                          AND n.heartbeat_at + 3 * n.heartbeat_interval_ms * interval '1 millisecond'
                              > (SELECT clock_timestamp()))
     ORDER BY expires_at
     LIMIT :limit
       FOR UPDATE SKIP LOCKED)

-- name: prune_history
-- Ended terms older than the retention.
DELETE FROM ${schema}.lease_history WHERE ctid IN (
    SELECT ctid FROM ${schema}.lease_history
     WHERE ended_at < (SELECT clock_timestamp()) - :retention_ms * interval '1 millisecond'
     ORDER BY ended_at
     LIMIT :limit)

-- name: prune_open_history
-- A term never closed (its lease expired and nobody acquired it since) whose lease row was pruned: it
-- is ended for good; the open rows are few (one per lease), on their own partial index.
DELETE FROM ${schema}.lease_history h WHERE ctid IN (
    SELECT ctid FROM ${schema}.lease_history o
     WHERE o.ended_at IS NULL AND o.acquired_at < (SELECT clock_timestamp()) - :retention_ms * interval '1 millisecond'
       AND NOT EXISTS (SELECT 1 FROM ${schema}.lease l WHERE l.name = o.name)
     LIMIT :limit)

-- name: history
SELECT name, generation, owner_id, acquired_at, ended_at, end_reason
  FROM ${schema}.lease_history
 WHERE name = :name
 ORDER BY generation DESC
 LIMIT :limit
