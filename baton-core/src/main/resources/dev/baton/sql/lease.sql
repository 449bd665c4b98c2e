-- Statements on ${schema}.lease and ${schema}.lease_history. Every time is the database's
-- clock_timestamp(): never now() (the transaction start) and never the application's clock.
-- TTLs are bound as milliseconds.

-- name: acquire
-- Takes a free or expired lease, or creates it, or re-grants it to its current owner (whose earlier
-- acquisition may have committed after the owner gave up waiting for the answer). A new generation
-- on every grant, re-acquisition by the same owner included, so every earlier grant is void. If another transaction holds the row (a fenced write
-- under FOR SHARE, a renewal), this waits and then re-checks expiry on the newest row version.
-- Parameters: name, owner_id, ttl_ms, owner_meta, ttl_ms, name.
WITH acquired AS (
    INSERT INTO ${schema}.lease AS l (name, owner_id, generation, acquired_at, renewed_at, expires_at, owner_meta)
    VALUES (?, ?, 1, clock_timestamp(), clock_timestamp(), clock_timestamp() + ? * interval '1 millisecond', ?::jsonb)
    ON CONFLICT (name) DO UPDATE
       SET owner_id    = excluded.owner_id,
           generation  = l.generation + 1,
           acquired_at = clock_timestamp(),
           renewed_at  = clock_timestamp(),
           expires_at  = clock_timestamp() + ? * interval '1 millisecond',
           owner_meta  = excluded.owner_meta
     WHERE l.owner_id IS NULL OR l.expires_at <= clock_timestamp() OR l.owner_id = excluded.owner_id
    RETURNING name, owner_id, generation, acquired_at, expires_at
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
SELECT false, owner_id, generation, acquired_at, expires_at, clock_timestamp()
  FROM ${schema}.lease
 WHERE name = ? AND NOT EXISTS (SELECT 1 FROM acquired)

-- name: renew
-- Extends the lease only for its current owner and generation, and only while it has not expired:
-- a renewal never resurrects an expired lease, so it cannot race a takeover into two owners.
-- Parameters: ttl_ms, name, owner_id, generation.
UPDATE ${schema}.lease
   SET renewed_at = clock_timestamp(),
       expires_at = clock_timestamp() + ? * interval '1 millisecond'
 WHERE name = ? AND owner_id = ? AND generation = ? AND expires_at > clock_timestamp()
RETURNING expires_at, clock_timestamp() AS db_now

-- name: release
-- Clears the owner (the row and its generation stay), closes the history row and wakes waiting
-- candidates with a notification on the lease channel (delivered at commit).
-- Parameters: name, owner_id, generation, channel.
WITH released AS (
    UPDATE ${schema}.lease
       SET owner_id = NULL, owner_meta = NULL, expires_at = clock_timestamp()
     WHERE name = ? AND owner_id = ? AND generation = ?
    RETURNING name, generation
), ended AS (
    UPDATE ${schema}.lease_history h
       SET ended_at = clock_timestamp(), end_reason = 'released'
      FROM released r
     WHERE h.name = r.name AND h.generation = r.generation AND h.ended_at IS NULL
)
SELECT pg_notify(?, r.name) FROM released r

-- name: close_history
-- Closes earlier generations left open (see Leases#closeEarlierHistory). Parameters: name, generation.
UPDATE ${schema}.lease_history h
   SET ended_at = coalesce((SELECT acquired_at FROM ${schema}.lease_history n
                             WHERE n.name = h.name AND n.generation = h.generation + 1), clock_timestamp()),
       end_reason = 'expired'
 WHERE h.name = ? AND h.generation < ? AND h.ended_at IS NULL

-- name: fence
-- The fence of every protected write: run inside the write's transaction. FOR SHARE locks the
-- lease row until commit, so a takeover (an UPDATE of this row) waits for the write to commit or
-- roll back; under Read Committed a row changed by a committed takeover is re-read and fails the
-- check. A plain subquery would read the snapshot and let a stale write through.
-- The second column bounds how long this transaction may sit idle holding the lock (a paused
-- writer must not block a takeover forever): set_config(..., true) is transaction-local.
-- Parameters: idle_timeout (text, e.g. '15000ms'), name, owner_id, generation.
SELECT l.generation, set_config('idle_in_transaction_session_timeout', ?, true)
  FROM ${schema}.lease l
 WHERE l.name = ? AND l.owner_id = ? AND l.generation = ? AND l.expires_at > clock_timestamp()
   FOR SHARE OF l

-- name: inspect
SELECT name, owner_id, generation, acquired_at, renewed_at, expires_at, owner_meta::text AS owner_meta,
       clock_timestamp() AS db_now
  FROM ${schema}.lease
 WHERE name = ?

-- name: list
SELECT name, owner_id, generation, acquired_at, renewed_at, expires_at, owner_meta::text AS owner_meta,
       clock_timestamp() AS db_now
  FROM ${schema}.lease
 ORDER BY name

-- name: history
-- Parameters: name, limit.
SELECT name, generation, owner_id, acquired_at, ended_at, end_reason
  FROM ${schema}.lease_history
 WHERE name = ?
 ORDER BY generation DESC
 LIMIT ?
