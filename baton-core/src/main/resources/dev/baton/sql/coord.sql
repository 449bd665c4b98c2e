-- Statements of the coordination primitives. Times are the database's clock_timestamp(). Parameters are
-- named (:name); see Sql.

-- name: first_delivery
-- True for one caller per (source, delivery_id) while the record lives; an expired record
-- counts as absent.
INSERT INTO ${schema}.inbound_delivery AS d (source, delivery_id, received_at, expires_at, receiver)
VALUES (:source, :delivery_id, clock_timestamp(), clock_timestamp() + :ttl_ms * interval '1 millisecond', :receiver)
ON CONFLICT (source, delivery_id) DO UPDATE
   SET received_at = excluded.received_at, expires_at = excluded.expires_at, receiver = excluded.receiver
 WHERE d.expires_at <= clock_timestamp()
RETURNING 1

-- name: mint_token
INSERT INTO ${schema}.single_use_token (token_hash, purpose, subject, created_at, expires_at)
VALUES (:token_hash, :purpose, :subject, clock_timestamp(), clock_timestamp() + :ttl_ms * interval '1 millisecond')

-- name: consume_token
-- Deletes and returns the token's subject if it exists, has this purpose and has not expired:
-- two concurrent consumers cannot both get the row.
DELETE FROM ${schema}.single_use_token
 WHERE token_hash = :token_hash AND purpose = :purpose AND expires_at > clock_timestamp()
RETURNING coalesce(subject, '')

-- name: lock_timeout
-- Transaction-local lock timeout for claim locks (:timeout as e.g. '10000ms').
SELECT set_config('lock_timeout', :timeout, true)

-- name: advisory_xact_lock
-- The transaction-scoped lock on :key (hashed to a 64-bit lock id).
SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))

-- name: cap_lock
-- Two statements in one round trip. First the transaction-local bounds of a cap admission (e.g. '500ms'):
-- how long to wait for the key's lock, how long any statement may run, and how long the transaction may
-- sit idle (a paused admitter's session is ended so that its lock frees). Then the key's advisory lock
-- (as advisory_xact_lock), which serialises the admissions of one key.
SELECT set_config('lock_timeout', :lock_timeout, true), set_config('statement_timeout', :statement_timeout, true),
       set_config('idle_in_transaction_session_timeout', :idle_timeout, true);
SELECT pg_advisory_xact_lock(hashtextextended(:lock_key, 0))

-- name: cap_count
-- Run after the cap's advisory lock in the same transaction (a new statement, so a new snapshot
-- that sees every holder committed before the lock was granted).
SELECT count(*) FROM ${schema}.concurrency_slot
 WHERE cap = :cap AND key = :key AND expires_at > clock_timestamp()

-- name: cap_insert
INSERT INTO ${schema}.concurrency_slot (cap, key, holder, acquired_at, expires_at)
VALUES (:cap, :key, :holder, clock_timestamp(), clock_timestamp() + :ttl_ms * interval '1 millisecond')

-- name: cap_renew
UPDATE ${schema}.concurrency_slot SET expires_at = clock_timestamp() + :ttl_ms * interval '1 millisecond'
 WHERE cap = :cap AND key = :key AND holder = :holder AND expires_at > clock_timestamp()

-- name: cap_release
DELETE FROM ${schema}.concurrency_slot WHERE cap = :cap AND key = :key AND holder = :holder

-- name: rate_acquire
-- GCRA in one statement: T = window / limit (the emission interval, :emission_us); a request is allowed
-- when the new theoretical arrival time max(tat, now) + T is at most `window` (:window_us) ahead of now.
-- Denied requests change nothing and learn when to retry.
WITH allowed AS (
    INSERT INTO ${schema}.rate_limit AS r (limiter, key, tat)
    VALUES (:limiter, :key, clock_timestamp() + :emission_us * interval '1 microsecond')
    ON CONFLICT (limiter, key) DO UPDATE
       SET tat = greatest(r.tat, clock_timestamp()) + :emission_us * interval '1 microsecond'
     WHERE greatest(r.tat, clock_timestamp()) + :emission_us * interval '1 microsecond' - clock_timestamp()
           <= :window_us * interval '1 microsecond'
    RETURNING tat
)
SELECT true AS allowed, 0::bigint AS retry_after_us FROM allowed
UNION ALL
SELECT false, greatest(0, (extract(epoch FROM (greatest(r.tat, clock_timestamp()) + :emission_us * interval '1 microsecond'
                                              - clock_timestamp())) * 1000000)::bigint - :window_us)
  FROM ${schema}.rate_limit r
 WHERE r.limiter = :limiter AND r.key = :key AND NOT EXISTS (SELECT 1 FROM allowed)

-- name: purge_deliveries
-- The purges compare with (SELECT clock_timestamp()), evaluated once per statement, so that the expiry
-- index gives the range (a volatile call per row could not be an index condition).
DELETE FROM ${schema}.inbound_delivery WHERE ctid IN (
    SELECT ctid FROM ${schema}.inbound_delivery WHERE expires_at <= (SELECT clock_timestamp()) LIMIT :limit)

-- name: purge_tokens
DELETE FROM ${schema}.single_use_token WHERE ctid IN (
    SELECT ctid FROM ${schema}.single_use_token WHERE expires_at <= (SELECT clock_timestamp()) LIMIT :limit)

-- name: purge_slots
DELETE FROM ${schema}.concurrency_slot WHERE ctid IN (
    SELECT ctid FROM ${schema}.concurrency_slot WHERE expires_at <= (SELECT clock_timestamp()) LIMIT :limit)

-- name: purge_rates
-- A key whose theoretical arrival time has passed holds no state worth keeping.
DELETE FROM ${schema}.rate_limit WHERE ctid IN (
    SELECT ctid FROM ${schema}.rate_limit WHERE tat <= (SELECT clock_timestamp()) LIMIT :limit)

-- name: purge_redemptions
DELETE FROM ${schema}.grant_redemption WHERE ctid IN (
    SELECT ctid FROM ${schema}.grant_redemption WHERE expires_at <= (SELECT clock_timestamp()) LIMIT :limit)

-- name: epoch
-- The subject's current epoch (0 when never revoked).
SELECT coalesce((SELECT epoch FROM ${schema}.revocation_epoch WHERE scope = :scope AND subject = :subject), 0)

-- name: revoke_all
-- Bumps the subject's epoch: every grant issued under an earlier one is refused from now on (within each
-- node's staleness bound).
INSERT INTO ${schema}.revocation_epoch AS r (scope, subject, epoch, revoked_at)
VALUES (:scope, :subject, 1, clock_timestamp())
ON CONFLICT (scope, subject) DO UPDATE SET epoch = r.epoch + 1, revoked_at = excluded.revoked_at
RETURNING epoch

-- name: db_now
SELECT clock_timestamp()

-- name: redeem_grant
-- Records a verified grant's id if it has not expired on the database clock and was not redeemed
-- before: one caller across all instances gets the row.
INSERT INTO ${schema}.grant_redemption (purpose, grant_id, subject, redeemed_at, expires_at, redeemed_by)
SELECT :purpose, :grant_id, :subject, clock_timestamp(), :expires_at::timestamptz, :redeemed_by
 WHERE :expires_at::timestamptz > clock_timestamp()
ON CONFLICT (purpose, grant_id) DO NOTHING
RETURNING redeemed_at