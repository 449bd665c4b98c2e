-- Statements on ${schema}.job. Times are the database's clock_timestamp() (statement_timestamp() in fail,
-- where one instant is both the error's time and the base of the retry delay); durations are bound as
-- milliseconds. Every statement that changes a running attempt matches id AND attempt_token AND
-- state = 'running': a stale attempt (rescued, re-claimed elsewhere) can change nothing.
-- Statements given a batch of attempts say it as (j.state = 'running') IS TRUE, the same test for a NOT NULL
-- column, so that the planner looks the rows up by primary key. Written plainly, the test lets it scan the
-- partial index job_running_lease instead: it estimates that index as small (few jobs are running when the
-- table is analyzed), but at a high claim rate it holds an entry for every attempt that ended since the last
-- vacuum, so each batch walked all of them (complete: 8 ms per batch of 10 at 200,000 jobs instead of 0.2).
-- JobPlansTest checks the plans.
-- Parameters are named (:name); see Sql.
-- Idempotency keys: every statement names the predicate idempotency_key IS NOT NULL (ON CONFLICT, the key
-- lookup), so it works both with the unique constraint on the column and with a unique index on the keys
-- alone, which a later schema version puts in its place (decision 0030; JobIdempotencyNextIndexTest).

-- name: enqueue
-- One job; a duplicate idempotency key inserts nothing (the caller then looks the key up). The
-- notification (unless :notify is false: EnqueueWakes notifies after the commit) is sent at commit, so workers
-- wake only for committed jobs. :run_at null means now.
WITH ins AS (
    INSERT INTO ${schema}.job (queue, kind, payload, priority, state, run_at, max_attempts, timeout_ms,
                               concurrency_key, key_fifo, idempotency_key, metadata)
    VALUES (:queue, :kind, :payload::jsonb, :priority, 'available',
            coalesce(:run_at::timestamptz, clock_timestamp()) + :delay_ms * interval '1 millisecond',
            :max_attempts, :timeout_ms, :concurrency_key, :key_fifo, :idempotency_key, :metadata::jsonb)
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, queue
)
SELECT id, (CASE WHEN :notify::boolean THEN pg_notify(:channel, queue) END) IS NULL AS notified FROM ins

-- name: enqueue_batch
-- Many jobs in one statement, in input order: one array per column; notified as enqueue.
WITH input AS (
    SELECT * FROM unnest(:queues::text[], :kinds::text[], :payloads::text[], :priorities::smallint[],
                         :run_ats::timestamptz[], :delays_ms::bigint[], :max_attempts::int[], :timeouts_ms::bigint[],
                         :concurrency_keys::text[], :key_fifo::boolean[], :idempotency_keys::text[], :metadata::text[])
             WITH ORDINALITY AS t(queue, kind, payload, priority, run_at, delay_ms, max_attempts, timeout_ms,
                                  concurrency_key, key_fifo, idempotency_key, metadata, ord)
), ins AS (
    INSERT INTO ${schema}.job (queue, kind, payload, priority, state, run_at, max_attempts, timeout_ms,
                               concurrency_key, key_fifo, idempotency_key, metadata)
    SELECT queue, kind, payload::jsonb, priority, 'available',
           coalesce(run_at, clock_timestamp()) + delay_ms * interval '1 millisecond',
           max_attempts, timeout_ms, concurrency_key, key_fifo, idempotency_key, metadata::jsonb
      FROM input ORDER BY ord
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, queue, idempotency_key
), notified AS (
    SELECT pg_notify(:channel, q) FROM (SELECT DISTINCT queue AS q FROM ins) d WHERE :notify::boolean
)
SELECT id, idempotency_key, (SELECT count(*) FROM notified) AS n FROM ins ORDER BY id

-- name: reserve_ids
-- Before a COPY of jobs: :n job ids, in order, and the database's clock (the run_at of jobs due now).
SELECT clock_timestamp() AS now, array(SELECT nextval('${schema}.job_id_seq') FROM generate_series(1, :n)) AS ids

-- name: reserve_ids_and_notify
-- reserve_ids and notify_queues in one statement, for a COPY inside a transaction: the notifications are
-- delivered at its commit, with the rows, or never.
SELECT clock_timestamp() AS now, array(SELECT nextval('${schema}.job_id_seq') FROM generate_series(1, :n)) AS ids,
       (SELECT count(pg_notify(:channel, q)) FROM unnest(:queues::text[]) AS q) AS notified

-- name: copy_jobs
-- The rows of a batch without idempotency keys, in COPY's binary format (BinaryCopy), with the ids reserved
-- above.
COPY ${schema}.job (id, queue, kind, payload, priority, state, run_at, max_attempts, timeout_ms, concurrency_key,
                    key_fifo, metadata) FROM STDIN WITH (FORMAT binary)

-- name: notify_queues
-- After a COPY, or after enqueues that committed without notifying (EnqueueWakes): wakes the queues' workers
-- (delivered at commit, so only for committed jobs).
SELECT count(pg_notify(:channel, q)) FROM unnest(:queues::text[]) AS q

-- name: find_by_keys
SELECT id, idempotency_key FROM ${schema}.job WHERE idempotency_key = ANY (:keys::text[]) AND idempotency_key IS NOT NULL

-- name: claim
-- Claims up to :limit ready jobs of a queue as new attempts: FOR UPDATE SKIP LOCKED so claimers
-- never wait for each other; only kinds this node handles (in a rolling deploy an older node leaves a
-- new kind to a node that knows it, without using an attempt); at most one job per concurrency key per
-- claim, and none whose key already has a running job; a job whose key is in FIFO order (key_fifo) only
-- when no older job of its key is still available, waiting or not (index job_waiting_key). Two claimers racing on one key are settled by
-- the unique index job_running_key: the later one gets a unique violation, claims nothing and retries
-- next poll. :candidates bounds the rows locked before one per key is picked: twice :limit, or :limit
-- while the queue's recent claims came back full and without keyed jobs (decision 0027).
-- (:after_priority, :after_run_at, :after_id) is where the scan of job_ready starts: while a backlog lasts, the
-- key of the last job this producer claimed, so that the scan does not step over the entries that the claims
-- since the last vacuum left dead at the head of that index (decision 0037); (-1, any time, 0) from the head,
-- as the table's CHECK allows priorities 0 to 100 only.
-- The candidates are taken in two LIMITs: a fixed one under the lock (4,000: a queue has at most 1,000 slots,
-- and claim_limited asks for 4 x its limit) and :candidates above it. Rows are locked only as the outer LIMIT
-- takes them, so nothing more is locked; the fixed bound is for the planner. A generic plan (a prepared
-- statement under plan_cache_mode = force_generic_plan) estimates a LIMIT given as a parameter at a tenth of
-- the rows: behind a backlog of 600,000 jobs that estimate crossed jit_above_cost, and every claim was
-- compiled by the JIT (19–25 ms a claim of 256 instead of about 4; decision 0045, JobPlansTest).
WITH candidates AS (
  SELECT * FROM (
    SELECT id, priority, run_at, concurrency_key
      FROM ${schema}.job j
     WHERE j.state = 'available' AND j.queue = :queue AND j.kind = ANY (:kinds::text[])
       AND j.run_at <= clock_timestamp()
       AND NOT EXISTS (SELECT 1 FROM ${schema}.job_queue q WHERE q.queue = :queue AND q.paused)
       AND (j.concurrency_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM ${schema}.job r WHERE r.state = 'running' AND r.concurrency_key = j.concurrency_key))
       AND (NOT j.key_fifo OR NOT EXISTS (
            SELECT 1 FROM ${schema}.job o
             WHERE o.state = 'available' AND o.concurrency_key = j.concurrency_key AND o.id < j.id))
       AND (j.priority, j.run_at, j.id) > (:after_priority::smallint, :after_run_at::timestamptz, :after_id::bigint)
     ORDER BY j.priority, j.run_at, j.id
     LIMIT 4000
       FOR UPDATE SKIP LOCKED
  ) bounded
  LIMIT :candidates
), picked AS (
    SELECT id FROM (
        SELECT DISTINCT ON (coalesce(concurrency_key, 'id:' || id)) id, priority, run_at
          FROM candidates
         ORDER BY coalesce(concurrency_key, 'id:' || id), priority, run_at, id
    ) one_per_key
     ORDER BY priority, run_at, id
     LIMIT :limit
)
UPDATE ${schema}.job j
   SET state = 'running', attempt = j.attempt + 1, attempt_token = nextval('${schema}.job_attempt_token'),
       lease_expires_at = clock_timestamp() + :job_lease_ms * interval '1 millisecond', claimed_by = :node_id,
       attempted_at = clock_timestamp()
  FROM picked
 WHERE j.id = picked.id
RETURNING j.id, j.queue, j.kind, j.payload::text AS payload, j.attempt, j.max_attempts, j.attempt_token,
          j.timeout_ms, j.priority, j.idempotency_key, j.concurrency_key, j.stall_count, j.created_at,
          (extract(epoch FROM j.attempted_at - j.run_at) * 1000)::bigint AS waited_ms, j.metadata::text AS metadata,
          j.run_at

-- name: heartbeat
-- Extends the leases of running attempts. Rows locked by their own completion transaction (which
-- holds the job row FOR UPDATE until it commits) are skipped rather than waited for, so one long
-- completion transaction cannot stall the heartbeat of every other job on the node. Returns, per
-- current attempt: extended (with its cancel flag), or locked (still current, not extended this time).
-- Attempts missing from the result are no longer current. A lease that has expired is never extended,
-- like a lease's renewal: a beat delayed past the expiry (a pause inside its send) must not revive an
-- attempt whose place a cluster-wide job limit already gave to another job; the attempt self-stops.
WITH lockable AS (
    SELECT j.id FROM ${schema}.job j
     WHERE j.id = ANY(:ids::bigint[]) AND j.attempt_token = ANY(:tokens::bigint[])
       AND (j.state = 'running') IS TRUE AND j.lease_expires_at > clock_timestamp()
       FOR UPDATE SKIP LOCKED
), extended AS (
    UPDATE ${schema}.job j
       SET lease_expires_at = clock_timestamp() + :job_lease_ms * interval '1 millisecond'
      FROM lockable l
     WHERE j.id = l.id
    RETURNING j.id, j.cancel_requested
)
SELECT id, cancel_requested, true AS extended FROM extended
UNION ALL
SELECT j.id, j.cancel_requested, false
  FROM ${schema}.job j
 WHERE j.id = ANY(:ids::bigint[]) AND j.attempt_token = ANY(:tokens::bigint[])
   AND (j.state = 'running') IS TRUE AND j.lease_expires_at > clock_timestamp()
   AND j.id NOT IN (SELECT id FROM extended)

-- name: complete
-- Successful attempts, batched. Attempt tokens are unique (one sequence), so "id in the batch and token in
-- the batch" is the pair test without a join. Not a join with unnest(ids, tokens): under load that form
-- missed rows a concurrent heartbeat had just updated (the row still running with the very token given, a
-- retry a moment later matched it: measured, 30 to 60 rows per run of 60,000 jobs with 50 ms heartbeats),
-- and the success was lost. Every statement here that fences attempts by token takes this form.
UPDATE ${schema}.job j
   SET state = 'succeeded', finished_at = clock_timestamp(), lease_expires_at = NULL
 WHERE j.id = ANY(:ids::bigint[]) AND j.attempt_token = ANY(:tokens::bigint[]) AND (j.state = 'running') IS TRUE
RETURNING j.id

-- name: lock_attempts
-- Before the fail and snooze statements, in their transaction: locks the rows of the attempts still current
-- (waiting out a heartbeat that holds one), in id order. Those two statements need a value per attempt, so
-- they join unnest(...); run after this lock they see, in a fresh snapshot, rows nothing else can change
-- until the commit, so the join is never rechecked against a concurrent update (the form that missed
-- rows, see complete).
SELECT id FROM ${schema}.job
 WHERE id = ANY(:ids::bigint[]) AND attempt_token = ANY(:tokens::bigint[]) AND (state = 'running') IS TRUE
 ORDER BY id
   FOR UPDATE

-- name: fence_attempt
-- Inside a handler's completion transaction: locks the job row if this attempt is still current.
SELECT id FROM ${schema}.job WHERE id = :id AND attempt_token = :token AND state = 'running' FOR UPDATE

-- name: fail
-- Failed attempts, batched: each error is appended; the job is retried at now + delay, or ends
-- failed after its last attempt (or when not retryable), or cancelled when cancellation was
-- requested (also when a retryable failure raced a cancel request not yet delivered by a heartbeat:
-- such a job is not retried). Per attempt: its error (json text), its retry delay (null: no retry) and its
-- outcome ('retry' | 'fail' | 'cancel'). Runs after lock_attempts, in its transaction. One instant,
-- statement_timestamp(), is the error's time and the base of its retry delay.
UPDATE ${schema}.job j
   SET state = CASE WHEN t.outcome = 'cancel' OR (t.outcome = 'retry' AND j.cancel_requested) THEN 'cancelled'
                    WHEN t.outcome = 'retry' AND j.attempt < j.max_attempts THEN 'available'
                    ELSE 'failed' END,
       run_at = CASE WHEN t.outcome = 'retry' AND j.attempt < j.max_attempts AND NOT j.cancel_requested
                     THEN statement_timestamp() + t.delay_ms * interval '1 millisecond' ELSE j.run_at END,
       finished_at = CASE WHEN t.outcome = 'retry' AND j.attempt < j.max_attempts AND NOT j.cancel_requested
                          THEN NULL ELSE statement_timestamp() END,
       errors = j.errors || jsonb_build_array(t.error::jsonb || jsonb_build_object('at', statement_timestamp())),
       attempt_token = NULL, lease_expires_at = NULL
  FROM unnest(:ids::bigint[], :tokens::bigint[], :errors::text[], :delays_ms::bigint[], :outcomes::text[])
       AS t(id, token, error, delay_ms, outcome)
 WHERE j.id = t.id AND j.attempt_token = t.token AND j.state = 'running'
RETURNING j.id, j.state

-- name: release
-- Graceful drain: give attempts whose handler has ended back at once, not counted as an attempt. A job
-- whose cancellation was requested ends cancelled instead: it is not made available again.
UPDATE ${schema}.job j
   SET state = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE 'available' END,
       finished_at = CASE WHEN j.cancel_requested THEN clock_timestamp() END,
       attempt = greatest(j.attempt - 1, 0), run_at = clock_timestamp(),
       attempt_token = NULL, lease_expires_at = NULL, claimed_by = NULL
 WHERE j.id = ANY(:ids::bigint[]) AND j.attempt_token = ANY(:tokens::bigint[]) AND (j.state = 'running') IS TRUE
RETURNING j.id

-- name: rescue
-- Running attempts whose lease expired on the database clock go back to the queue with a stall
-- counted, or end failed after max_stalls stalls or their last attempt (cancelled, if cancellation
-- was requested: a cancelled job is not run again). Safe if two rescuers
-- overlap: SKIP LOCKED, and the state/lease predicate is re-checked on the locked row. Queues that got
-- jobs back are notified, so idle workers claim them at once instead of at their next poll.
WITH expired AS (
    SELECT id FROM ${schema}.job
     WHERE state = 'running' AND lease_expires_at < (SELECT clock_timestamp())
     ORDER BY lease_expires_at
     LIMIT :limit
       FOR UPDATE SKIP LOCKED
), rescued AS (
UPDATE ${schema}.job j
   SET stall_count = j.stall_count + 1,
       state = CASE WHEN j.cancel_requested THEN 'cancelled'
                    WHEN j.stall_count + 1 >= :max_stalls OR j.attempt >= j.max_attempts THEN 'failed' ELSE 'available' END,
       finished_at = CASE WHEN j.cancel_requested OR j.stall_count + 1 >= :max_stalls OR j.attempt >= j.max_attempts
                          THEN clock_timestamp() END,
       run_at = clock_timestamp(),
       errors = j.errors || jsonb_build_array(jsonb_build_object(
           'attempt', j.attempt, 'node', j.claimed_by, 'at', clock_timestamp(), 'class', 'stalled',
           'message', 'attempt lease expired at ' || j.lease_expires_at || ' without completion (stall '
                      || (j.stall_count + 1) || '); rescued by ' || :node_id)),
       attempt_token = NULL, lease_expires_at = NULL
  FROM expired
 WHERE j.id = expired.id AND j.state = 'running'
RETURNING j.id, j.state, j.queue, j.kind
), notified AS (
    SELECT pg_notify(:channel, q) FROM (SELECT DISTINCT queue AS q FROM rescued WHERE state = 'available') d
)
SELECT id, state, queue, kind, (SELECT count(*) FROM notified) AS n FROM rescued

-- name: cancel
-- Available jobs end cancelled at once; running ones get a cancellation request.
UPDATE ${schema}.job
   SET state = CASE WHEN state = 'available' THEN 'cancelled' ELSE state END,
       finished_at = CASE WHEN state = 'available' THEN clock_timestamp() ELSE finished_at END,
       cancel_requested = true
 WHERE id = :id AND state IN ('available', 'running')
RETURNING state

-- name: retry
-- A failed or cancelled job runs again now, with at least one more attempt allowed. At the ceiling of
-- max_attempts (1000) the ceiling stays: a failure of that extra attempt still ends the job failed,
-- because the fail statement compares attempt < max_attempts.
UPDATE ${schema}.job
   SET state = 'available', run_at = clock_timestamp(), finished_at = NULL, cancel_requested = false,
       max_attempts = least(greatest(max_attempts, attempt + 1), 1000), stall_count = 0
 WHERE id = :id AND state IN ('failed', 'cancelled')
RETURNING id

-- name: get
SELECT id, queue, kind, payload::text AS payload, priority, state, run_at, attempt, max_attempts, timeout_ms,
       claimed_by, concurrency_key, idempotency_key, stall_count, cancel_requested, errors::text AS errors,
       created_at, attempted_at, finished_at, lease_expires_at, metadata::text AS metadata
  FROM ${schema}.job WHERE id = :id

-- name: prune
-- Deletes up to :limit jobs finished before now - retention, oldest first. The fixed LIMIT (above the pruner's
-- batches of 1,000) is for the planner, as in claim (decision 0045): a generic plan estimated :limit at a tenth of
-- the finished jobs and deleted them by a hash join over a scan of the whole job table, each batch.
DELETE FROM ${schema}.job WHERE id IN (
    SELECT id FROM (
        SELECT id FROM ${schema}.job
         WHERE state IN ('succeeded', 'failed', 'cancelled')
           AND finished_at < (SELECT clock_timestamp()) - :retention_ms * interval '1 millisecond'
         ORDER BY finished_at
         LIMIT 10000) bounded
     LIMIT :limit)

-- name: set_paused
INSERT INTO ${schema}.job_queue (queue, paused) VALUES (:queue, :paused)
ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused, updated_at = clock_timestamp()

-- name: queue_stats
-- Depth per queue, on the partial indexes of available and running jobs only (never a scan of the
-- finished jobs kept for their retention), plus paused queues without jobs.
WITH depth AS (
    SELECT queue, count(*) AS available, 0::bigint AS running, min(run_at) AS oldest_run_at
      FROM ${schema}.job WHERE state = 'available' GROUP BY queue
    UNION ALL
    SELECT queue, 0, count(*), NULL FROM ${schema}.job WHERE state = 'running' GROUP BY queue
    UNION ALL
    SELECT queue, 0, 0, NULL FROM ${schema}.job_queue WHERE paused
)
SELECT d.queue, sum(d.available) AS available, sum(d.running) AS running, min(d.oldest_run_at) AS oldest_run_at,
       coalesce(bool_or(q.paused), false) AS paused
  FROM depth d LEFT JOIN ${schema}.job_queue q ON q.queue = d.queue
 GROUP BY d.queue
 ORDER BY d.queue

-- name: finished_stats
-- Finished jobs per queue and state, over everything kept for the retention period: reads every
-- finished row, so it is for an operator's occasional look, not for periodic polling.
SELECT queue, state, count(*) AS n
  FROM ${schema}.job WHERE state IN ('succeeded', 'failed', 'cancelled')
 GROUP BY queue, state
 ORDER BY queue, state

-- fragment: unhandled
-- The start of a WITH list, for fail_unhandled and unhandled_kinds, which must agree: up to the CTE unhandled,
-- the kinds of available jobs that neither the calling node (:own_kinds) nor any live node handles, left open
-- for the statement to go on. The calling node's kinds count as handled whatever its heartbeat says, so the
-- kinds of available jobs come from a loose index scan of job_available_kind in the gaps between them (gaps,
-- walk): one probe per gap and one per kind found, never a scan of the queue nor of the entries of the node's
-- own kinds, which its claims leave dead in that index until a vacuum (stepping over them cost 88-92 ms and
-- 3,800 buffers a call under a stream of 10,000 jobs/s; decision 0041). The first gap starts after '', which
-- sorts before every kind (at least one character) in any deterministic collation, and the last has no end
-- (before is null). A live node that does not say which kinds it handles (an older version) might handle any:
-- then no kind is unhandled.
WITH RECURSIVE gaps AS (
    SELECT o AS after, lead(o) OVER (ORDER BY o) AS before
      FROM (SELECT '' UNION SELECT unnest(:own_kinds::text[])) own(o)
), walk(kind, before, found) AS (
    SELECT after, before, false FROM gaps
    UNION ALL
    SELECT CASE WHEN w.before IS NULL
                THEN (SELECT j.kind FROM ${schema}.job j
                       WHERE j.state = 'available' AND j.kind > w.kind ORDER BY j.kind LIMIT 1)
                ELSE (SELECT j.kind FROM ${schema}.job j
                       WHERE j.state = 'available' AND j.kind > w.kind AND j.kind < w.before ORDER BY j.kind LIMIT 1)
           END, w.before, true
      FROM walk w WHERE w.kind IS NOT NULL
), kinds AS (
    SELECT kind FROM walk WHERE found AND kind IS NOT NULL
), live AS (
    SELECT n.meta FROM ${schema}.node n
     WHERE n.state <> 'stopped'
       AND n.heartbeat_at + 3 * n.heartbeat_interval_ms * interval '1 millisecond' > clock_timestamp()
), unhandled AS (
    SELECT k.kind FROM kinds k
     WHERE NOT EXISTS (SELECT 1 FROM live WHERE live.meta -> 'kinds' IS NULL)
       AND NOT EXISTS (SELECT 1 FROM live WHERE live.meta -> 'kinds' @> jsonb_build_array(k.kind))

-- name: fail_unhandled
-- Available jobs that have been due for longer than the timeout and whose kind no live node handles (the
-- fragment unhandled) end failed with a clear error. The jobs of each unhandled kind are picked oldest first
-- through job_available_kind, kind by kind (LATERAL): as a join, the planner scanned the whole table when its
-- statistics were taken during a backlog (1,674 buffers at 50,000 rows; JobUnhandledKindWalkTest, RetentionTest
-- E06). The caller runs this only after watching the cluster for the whole timeout without a failed pass (see
-- Maintenance), so a backlog built up while the database was unreachable (every heartbeat stale) is not failed
-- on the way back.
-- Both LIMITs have a fixed bound under :limit (the caller's batch, 1,000), as the claims do (decision 0045): a
-- generic plan (plan_cache_mode = force_generic_plan) estimates a LIMIT given as a parameter at a tenth of the
-- rows. Without them it was estimated at 237,066 behind 400,000 available jobs: the JIT compiled every pass (22-23
-- ms with nothing to fail, 61-165 ms on a session's first calls; 0.07 ms after), and a batch joined the picked ids
-- to a hash of every available job (204-293 ms for 1,000 jobs, 12-13 ms after; PostgreSQL 15, JobPlansTest).
-- include: unhandled
), picked AS (
    SELECT id FROM (
        SELECT p.id FROM unhandled u, LATERAL (
            SELECT * FROM (
                SELECT j.id FROM ${schema}.job j
                 WHERE j.state = 'available' AND j.kind = u.kind
                   AND j.run_at < (SELECT clock_timestamp()) - :timeout_ms::bigint * interval '1 millisecond'
                 ORDER BY j.run_at
                 LIMIT 10000
                   FOR UPDATE SKIP LOCKED
            ) bounded
             LIMIT :limit) p
         LIMIT 10000
    ) bounded_all
     LIMIT :limit
)
UPDATE ${schema}.job j
   SET state = 'failed', finished_at = clock_timestamp(),
       errors = j.errors || jsonb_build_array(jsonb_build_object(
           'attempt', j.attempt, 'at', clock_timestamp(), 'class', 'UnhandledJobKind',
           'message', format('no live node handles job kind %L and the job waited longer than %s s '
                             || '(unhandledKindTimeout); register a handler for the kind, then retry the job',
                             j.kind, round(:timeout_ms::bigint / 1000.0, 3))))
  FROM picked
 WHERE j.id = picked.id AND j.state = 'available'
RETURNING j.id, j.queue, j.kind

-- name: unhandled_kinds
-- The kinds of available jobs on the given queues that neither the calling node nor any live node
-- handles (the fragment unhandled), with their queue: what a worker reports as unhandled (a WARN, a metric, a
-- health detail); nothing is changed. One index probe per (kind, queue): a scalar subquery in run_at order,
-- which the planner cannot turn into a join, nor answer with a scan of the table when its statistics were taken
-- during a backlog (as EXISTS it did: 857 buffers a call at 50,000 rows; JobUnhandledKindWalkTest).
-- include: unhandled
)
SELECT u.kind, q.queue
  FROM unhandled u CROSS JOIN unnest(:queues::text[]) AS q(queue)
 WHERE (SELECT true FROM ${schema}.job j
         WHERE j.state = 'available' AND j.kind = u.kind AND j.queue = q.queue ORDER BY j.run_at LIMIT 1)
 ORDER BY u.kind, q.queue

-- name: make_due
-- Test support (the inline runner of baton-test): available jobs of the given queues and kinds that are
-- scheduled for later (a delay, a retry's backoff) become due now, so a test can run them without
-- waiting. Only available rows: running and finished jobs are left as they are.
UPDATE ${schema}.job
   SET run_at = clock_timestamp()
 WHERE state = 'available' AND queue = ANY (:queues::text[]) AND kind = ANY (:kinds::text[])
   AND run_at > clock_timestamp()

-- name: lock_limits
-- The limited claim path, statement 1 of 2 in one READ COMMITTED transaction: takes a transaction-scoped
-- advisory lock per limit that applies to the claim, in one sorted order (so two claimers never wait for
-- each other in a cycle). Every claim that counts against a limit holds its lock until it commits, so
-- the next statement of the next claimer, which starts after the lock is granted and takes a fresh
-- snapshot, sees every start committed before. Transaction-scoped: works through PgBouncer in
-- transaction mode, and is released by commit, rollback or a lost connection.
SELECT count(pg_advisory_xact_lock(k)) AS locked
  FROM (SELECT DISTINCT hashtextextended(:prefix || id, 0) AS k FROM unnest(:limit_ids::text[]) AS t(id) ORDER BY 1) s

-- name: claim_limited
-- The limited claim path, statement 2 of 2 (after lock_limits): the claim statement above plus the
-- limits of :limit_ids (values read here, so a changed value holds at once). Holders of a running
-- limit are running jobs whose attempt lease is live on the database clock: an expired attempt no
-- longer counts (its stale handler can write nothing, the attempt token fences it), and a rescued job
-- counts again only once re-claimed, as a new live attempt; so no place is ever counted free twice.
-- Jobs whose scope value is full are skipped before candidates are taken (they would otherwise fill
-- the candidates and hold back jobs of other values). Then per (limit, value) the candidates are
-- ranked in claim order, and a job is claimed only if its rank fits the room left under every limit
-- that applies to it (counting the ranks of jobs held back by another limit: conservative, never
-- over). Rates: GCRA as rate_acquire in coord.sql, emission interval T = window / starts; a value
-- may start floor((window - (max(tat, now) - now)) / T) now, and its tat moves by T per start taken.
-- One now (:now below) for holders, rates and attempted_at, so that attempted_at is the instant the
-- rate was checked against. The candidates are bounded twice, as in claim (decision 0045).
WITH now AS MATERIALIZED (
    SELECT clock_timestamp() AS t
), lim AS MATERIALIZED (
    SELECT l.id, l.queue AS fq, l.kind AS fk, l.metadata_key AS mk, l.max_running, l.rate_starts,
           l.rate_window_ms * 1000 AS window_us
      FROM ${schema}.job_limit l
     WHERE l.id = ANY (:limit_ids::text[]) AND (l.queue IS NULL OR l.queue = :queue)
       AND (l.kind IS NULL OR l.kind = ANY (:kinds::text[]))
), used AS MATERIALIZED (
    SELECT l.id, coalesce(r.metadata ->> l.mk, '') AS value, count(*) AS n
      FROM lim l
      JOIN ${schema}.job r ON r.state = 'running' AND r.lease_expires_at > (SELECT t FROM now)
           AND (l.fq IS NULL OR r.queue = l.fq)
           AND (l.fk IS NULL OR r.kind = l.fk)
           AND (l.mk IS NULL OR r.metadata ->> l.mk IS NOT NULL)
     WHERE l.max_running IS NOT NULL
     GROUP BY 1, 2
), rated AS MATERIALIZED (
    SELECT l.id, rl.key AS value,
           greatest(0, (extract(epoch FROM rl.tat - (SELECT t FROM now)) * 1000000)::bigint) AS ahead_us
      FROM lim l JOIN ${schema}.rate_limit rl ON rl.limiter = :prefix || l.id
     WHERE l.rate_starts IS NOT NULL
), room AS MATERIALIZED (
    -- The room left per (limit, value) seen so far; a value with no row has the limit's full room.
    SELECT u.id, u.value, l.max_running - u.n AS room FROM used u JOIN lim l ON l.id = u.id
    UNION ALL
    SELECT r.id, r.value, greatest(0, (l.window_us - r.ahead_us) * l.rate_starts / l.window_us)
      FROM rated r JOIN lim l ON l.id = r.id
), candidates AS (
  SELECT * FROM (
    SELECT j.id, j.priority, j.run_at, j.concurrency_key, j.kind, j.metadata
      FROM ${schema}.job j
     WHERE j.state = 'available' AND j.queue = :queue AND j.kind = ANY (:kinds::text[])
       AND j.run_at <= (SELECT t FROM now)
       AND NOT EXISTS (SELECT 1 FROM ${schema}.job_queue q WHERE q.queue = :queue AND q.paused)
       AND (j.concurrency_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM ${schema}.job r WHERE r.state = 'running' AND r.concurrency_key = j.concurrency_key))
       AND (NOT j.key_fifo OR NOT EXISTS (
            SELECT 1 FROM ${schema}.job o
             WHERE o.state = 'available' AND o.concurrency_key = j.concurrency_key AND o.id < j.id))
       AND NOT EXISTS (
            SELECT 1 FROM lim l JOIN room m ON m.id = l.id
             WHERE (l.fk IS NULL OR l.fk = j.kind) AND (l.mk IS NULL OR j.metadata ->> l.mk IS NOT NULL)
               AND m.value = coalesce(j.metadata ->> l.mk, '') AND m.room <= 0)
     ORDER BY j.priority, j.run_at, j.id
     LIMIT 4000
       FOR UPDATE SKIP LOCKED
  ) bounded
  LIMIT :candidates
), one_per_key AS (
    SELECT DISTINCT ON (coalesce(concurrency_key, 'id:' || id)) id, priority, run_at, kind, metadata
      FROM candidates
     ORDER BY coalesce(concurrency_key, 'id:' || id), priority, run_at, id
), ranked AS (
    SELECT c.id, l.id AS lid, coalesce(c.metadata ->> l.mk, '') AS value,
           row_number() OVER (PARTITION BY l.id, coalesce(c.metadata ->> l.mk, '')
                              ORDER BY c.priority, c.run_at, c.id) AS rank
      FROM one_per_key c
      JOIN lim l ON (l.fk IS NULL OR l.fk = c.kind) AND (l.mk IS NULL OR c.metadata ->> l.mk IS NOT NULL)
), refused AS (
    SELECT DISTINCT r.id
      FROM ranked r JOIN lim l ON l.id = r.lid
      LEFT JOIN room m ON m.id = r.lid AND m.value = r.value
     WHERE r.rank > coalesce(m.room, coalesce(l.max_running, l.rate_starts))
), picked AS (
    SELECT c.id, c.kind, c.metadata FROM one_per_key c
     WHERE c.id NOT IN (SELECT id FROM refused)
     ORDER BY c.priority, c.run_at, c.id
     LIMIT :limit
), rate_taken AS (
    -- Each start moves its value's theoretical arrival time by T (rounded up to the microsecond).
    INSERT INTO ${schema}.rate_limit AS r (limiter, key, tat)
    SELECT :prefix || l.id, coalesce(p.metadata ->> l.mk, ''),
           (SELECT t FROM now) + ceil(count(*) * l.window_us::numeric / l.rate_starts) * interval '1 microsecond'
      FROM picked p
      JOIN lim l ON l.rate_starts IS NOT NULL AND (l.fk IS NULL OR l.fk = p.kind)
           AND (l.mk IS NULL OR p.metadata ->> l.mk IS NOT NULL)
     GROUP BY l.id, l.mk, l.window_us, l.rate_starts, coalesce(p.metadata ->> l.mk, '')
    ON CONFLICT (limiter, key) DO UPDATE
       SET tat = greatest(r.tat, (SELECT t FROM now)) + (excluded.tat - (SELECT t FROM now))
)
UPDATE ${schema}.job j
   SET state = 'running', attempt = j.attempt + 1, attempt_token = nextval('${schema}.job_attempt_token'),
       lease_expires_at = clock_timestamp() + :job_lease_ms * interval '1 millisecond', claimed_by = :node_id,
       attempted_at = (SELECT t FROM now)
  FROM picked
 WHERE j.id = picked.id
RETURNING j.id, j.queue, j.kind, j.payload::text AS payload, j.attempt, j.max_attempts, j.attempt_token,
          j.timeout_ms, j.priority, j.idempotency_key, j.concurrency_key, j.stall_count, j.created_at,
          (extract(epoch FROM j.attempted_at - j.run_at) * 1000)::bigint AS waited_ms, j.metadata::text AS metadata,
          j.run_at

-- name: unique_lock
-- Scoped uniqueness (JobRequest.unique): locks the rows of the given keys, in key order so that two
-- batches never wait for each other in a cycle, creating the missing ones; returns each key's latest job
-- (0: none yet). The lock is held until the enqueue's transaction ends, so racing enqueues of one key
-- run one after the other. Under READ COMMITTED the next statements see the job a racer committed; under
-- REPEATABLE READ (a caller's transaction) a key row changed after the snapshot makes this statement fail
-- with a serialization failure instead of missing the racer's job.
INSERT INTO ${schema}.job_unique (unique_key, job_id)
SELECT k, 0 FROM (SELECT DISTINCT unnest(:keys::text[]) AS k) d ORDER BY k
ON CONFLICT (unique_key) DO UPDATE SET job_id = ${schema}.job_unique.job_id
RETURNING unique_key, job_id

-- name: unique_find
-- The key's latest job, if it is in the request's scope: 'available', 'active' (available or running),
-- or 'window' (enqueued within :window_ms on the database clock, whatever its state).
SELECT id, state FROM ${schema}.job
 WHERE id = :id
   AND CASE :scope WHEN 'available' THEN state = 'available'
                   WHEN 'active' THEN state IN ('available', 'running')
                   ELSE created_at > clock_timestamp() - :window_ms * interval '1 millisecond' END

-- name: unique_replace
-- Debounce: a waiting job takes the new payload and run-at. Only an available row: a job claimed
-- meanwhile (the claim's row lock is waited for, then the state re-checked) is never changed.
-- Workers are told at commit, as the run-at may have moved earlier.
UPDATE ${schema}.job
   SET payload = :payload::jsonb,
       run_at = coalesce(:run_at::timestamptz, clock_timestamp()) + :delay_ms * interval '1 millisecond'
 WHERE id = :id AND state = 'available'
RETURNING id, pg_notify(:channel, queue) IS NULL AS notified

-- name: enqueue_unique
-- The enqueue statement for a job with a uniqueness key; the key's row (locked by unique_lock in this
-- transaction) then names the new job as the key's latest.
WITH ins AS (
    INSERT INTO ${schema}.job (queue, kind, payload, priority, state, run_at, max_attempts, timeout_ms,
                               concurrency_key, key_fifo, idempotency_key, metadata)
    VALUES (:queue, :kind, :payload::jsonb, :priority, 'available',
            coalesce(:run_at::timestamptz, clock_timestamp()) + :delay_ms * interval '1 millisecond',
            :max_attempts, :timeout_ms, :concurrency_key, :key_fifo, :idempotency_key, :metadata::jsonb)
    ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, queue
), keyed AS (
    UPDATE ${schema}.job_unique u SET job_id = ins.id FROM ins WHERE u.unique_key = :unique_key RETURNING u.job_id
)
SELECT id, pg_notify(:channel, queue) IS NULL AS notified, (SELECT count(*) FROM keyed) AS keyed FROM ins

-- name: snooze
-- Snoozed attempts, batched: back to available at now + delay (database clock) with the attempt given
-- back, so snoozing never uses up max_attempts; nothing is added to the errors. Fenced like every
-- outcome: a stale attempt matches no row. A job whose cancellation was requested ends cancelled. Runs
-- after lock_attempts, in its transaction.
UPDATE ${schema}.job j
   SET state = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE 'available' END,
       finished_at = CASE WHEN j.cancel_requested THEN clock_timestamp() END,
       attempt = greatest(j.attempt - 1, 0),
       run_at = clock_timestamp() + t.delay_ms * interval '1 millisecond',
       attempt_token = NULL, lease_expires_at = NULL, claimed_by = NULL
  FROM unnest(:ids::bigint[], :tokens::bigint[], :delays_ms::bigint[]) AS t(id, token, delay_ms)
 WHERE j.id = t.id AND j.attempt_token = t.token AND j.state = 'running'
RETURNING j.id

-- name: prune_unique
-- The key rows whose job is gone (pruned): the key's next enqueue would start afresh anyway; this only
-- keeps the table from growing with every key ever used. Bounded per call. A row is deleted only if it
-- still names the job seen gone: an enqueue that made it name a new job meanwhile (the delete waits for
-- its row lock, then re-checks job_id on the new version) keeps its row.
DELETE FROM ${schema}.job_unique u
 USING (SELECT s.unique_key, s.job_id FROM ${schema}.job_unique s
         WHERE NOT EXISTS (SELECT 1 FROM ${schema}.job j WHERE j.id = s.job_id)
         LIMIT :limit) gone
 WHERE u.unique_key = gone.unique_key AND u.job_id = gone.job_id

-- name: running_by_node
-- How many attempts each node runs now (running rows: the job_running_lease index's rows).
SELECT claimed_by, count(*) AS n FROM ${schema}.job WHERE state = 'running' GROUP BY claimed_by
