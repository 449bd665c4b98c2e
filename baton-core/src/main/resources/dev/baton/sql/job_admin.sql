-- The operator's statements on ${schema}.job (Admin): search, detail rows, bulk cancel / retry / delete,
-- throughput. Kept apart from job.sql, which is the claim and outcome path; JobStore hands out the store
-- of this file (JobAdminStore), so the job table's statements all stay in internal.job.
-- Every bulk statement takes an id list bounded by the caller (Admin.MAX_BULK), locks its rows
-- FOR UPDATE SKIP LOCKED (it never waits for a claim, a heartbeat or a completion in progress, so it
-- can neither stall a worker nor deadlock with one: a row locked at that moment is skipped and reported
-- as unchanged) and re-checks the state on the locked row, whatever the snapshot said.
-- Parameters are named (:name); see Sql.

-- name: match
-- The ids of the jobs a JobQuery selects, newest first (keyset on id: :before is the last id of the
-- previous page, Long.MAX_VALUE for the first). The one definition of the filter: searchJobs reads the
-- rows of these ids, and a bulk action by query acts on them. Each filter is off when its parameter is
-- null (:states always lists the states wanted). :error_like is a LIKE pattern whose wildcards the caller
-- escaped with '\', matched case-insensitively against the message and the class of every attempt's error.
-- The null tests stay: a plan made with the values folds them away and picks the index the filters allow, and
-- the generic plan, which cannot, is costed as a walk of the whole primary key. That dear estimate keeps a
-- server that chooses (plan_cache_mode auto) on plans made with the values. A cheaper generic plan (flags, one
-- CASE, a fixed LIMIT) was taken instead after a few searches, and a search by idempotency key then walked the
-- primary key: 206-369 ms instead of 0.3-1.2 ms at 800,000 jobs (JobPlansTest, decision 0045). A server that
-- forces generic plans does not choose: JobAdminStore.match sets its transaction to custom plans.
SELECT j.id
  FROM ${schema}.job j
 WHERE j.id < :before
   AND j.state = ANY (:states::text[])
   AND (:queue::text IS NULL OR j.queue = :queue::text)
   AND (:kind::text IS NULL OR j.kind = :kind::text)
   AND (:created_from::timestamptz IS NULL OR j.created_at >= :created_from::timestamptz)
   AND (:created_to::timestamptz IS NULL OR j.created_at < :created_to::timestamptz)
   AND (:concurrency_key::text IS NULL OR j.concurrency_key = :concurrency_key::text)
   AND (:idempotency_key::text IS NULL OR j.idempotency_key = :idempotency_key::text)
   AND (:error_like::text IS NULL OR EXISTS (
        SELECT 1 FROM jsonb_array_elements(j.errors) e
         WHERE e ->> 'message' ILIKE :error_like::text ESCAPE '\'
            OR e ->> 'class' ILIKE :error_like::text ESCAPE '\'))
 ORDER BY j.id DESC
 LIMIT :limit

-- name: rows
-- The jobs of the given ids, newest first, as Jobs.get reads them but with each error's stack trace left
-- out (a page of a thousand jobs with twenty-five attempts each would otherwise carry megabytes of
-- stacks; Admin.job(id) has them). A job deleted since it matched is simply missing.
SELECT j.id, j.queue, j.kind, j.payload::text AS payload, j.priority, j.state, j.run_at, j.attempt,
       j.max_attempts, j.claimed_by, j.concurrency_key, j.idempotency_key, j.stall_count, j.cancel_requested,
       (SELECT coalesce(jsonb_agg(e - 'stack' ORDER BY o), '[]'::jsonb)
          FROM jsonb_array_elements(j.errors) WITH ORDINALITY AS x(e, o))::text AS errors,
       j.created_at, j.finished_at, j.metadata::text AS metadata
  FROM ${schema}.job j
 WHERE j.id = ANY (:ids::bigint[])
 ORDER BY j.id DESC

-- name: cancel_ids
-- Jobs.cancel for many ids: an available job ends cancelled at once; a running one gets a cancellation
-- request (its handler is asked to stop at its next heartbeat, and the job then ends cancelled, not
-- retried). found: how many of the ids exist.
WITH target AS (
    SELECT id FROM ${schema}.job
     WHERE id = ANY (:ids::bigint[]) AND state IN ('available', 'running')
     ORDER BY id
       FOR UPDATE SKIP LOCKED
), changed AS (
    UPDATE ${schema}.job j
       SET state = CASE WHEN j.state = 'available' THEN 'cancelled' ELSE j.state END,
           finished_at = CASE WHEN j.state = 'available' THEN clock_timestamp() ELSE j.finished_at END,
           cancel_requested = true
      FROM target t
     WHERE j.id = t.id AND j.state IN ('available', 'running')
    RETURNING j.id, j.state
)
SELECT (SELECT count(*) FROM ${schema}.job WHERE id = ANY (:ids::bigint[])) AS found,
       count(*) FILTER (WHERE state = 'cancelled') AS changed,
       count(*) FILTER (WHERE state = 'running') AS requested
  FROM changed

-- name: retry_ids
-- Jobs.retry for many ids: a failed or cancelled job runs again now, with at least one more attempt
-- allowed (at the ceiling of 1000 attempts the ceiling stays, as in retry). Any other state is left alone.
WITH target AS (
    SELECT id FROM ${schema}.job
     WHERE id = ANY (:ids::bigint[]) AND state IN ('failed', 'cancelled')
     ORDER BY id
       FOR UPDATE SKIP LOCKED
), changed AS (
    UPDATE ${schema}.job j
       SET state = 'available', run_at = clock_timestamp(), finished_at = NULL, cancel_requested = false,
           max_attempts = least(greatest(j.max_attempts, j.attempt + 1), 1000), stall_count = 0
      FROM target t
     WHERE j.id = t.id AND j.state IN ('failed', 'cancelled')
    RETURNING j.id, j.queue
), notified AS (
    SELECT pg_notify(:channel, q) FROM (SELECT DISTINCT queue AS q FROM changed) d
)
SELECT (SELECT count(*) FROM ${schema}.job WHERE id = ANY (:ids::bigint[])) AS found,
       (SELECT count(*) FROM changed) AS changed, 0::bigint AS requested, (SELECT count(*) FROM notified) AS n

-- name: delete_ids
-- Deletes finished and available jobs of the given ids. A running job is never deleted: its attempt
-- belongs to the node that runs it (deleting the row would make its outcome vanish and free its
-- concurrency key while it still runs); it is counted as found, not changed. The state is re-checked on
-- the locked row, so a job claimed since the caller looked is skipped too. Uniqueness-key rows that named
-- a deleted job are left to the pruner (prune_unique), as after any prune.
WITH target AS (
    SELECT id FROM ${schema}.job
     WHERE id = ANY (:ids::bigint[]) AND state IN ('available', 'succeeded', 'failed', 'cancelled')
     ORDER BY id
       FOR UPDATE SKIP LOCKED
), changed AS (
    DELETE FROM ${schema}.job j
     USING target t
     WHERE j.id = t.id AND j.state IN ('available', 'succeeded', 'failed', 'cancelled')
    RETURNING j.id
)
SELECT (SELECT count(*) FROM ${schema}.job WHERE id = ANY (:ids::bigint[])) AS found,
       (SELECT count(*) FROM changed) AS changed, 0::bigint AS requested

-- name: throughput
-- Finished jobs per bucket and outcome over the last :buckets buckets of :bucket_ms, by finished_at on
-- the database clock (index job_finished). Buckets are aligned to multiples of the bucket length since
-- the epoch; the last one holds now, so it is still filling. Every bucket is returned, empty ones with
-- zeros. :queue null: every queue.
WITH now AS MATERIALIZED (
    SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint / :bucket_ms AS last
), counts AS (
    SELECT floor(extract(epoch FROM j.finished_at) * 1000)::bigint / :bucket_ms AS b, j.state, count(*) AS n
      FROM ${schema}.job j
     WHERE j.state IN ('succeeded', 'failed', 'cancelled')
       AND j.finished_at >= to_timestamp(((SELECT last FROM now) - :buckets + 1) * :bucket_ms / 1000.0)
       AND (:queue::text IS NULL OR j.queue = :queue::text)
     GROUP BY 1, 2
)
SELECT s.b * :bucket_ms AS start_ms,
       coalesce(sum(c.n) FILTER (WHERE c.state = 'succeeded'), 0) AS succeeded,
       coalesce(sum(c.n) FILTER (WHERE c.state = 'failed'), 0) AS failed,
       coalesce(sum(c.n) FILTER (WHERE c.state = 'cancelled'), 0) AS cancelled
  FROM generate_series((SELECT last FROM now) - :buckets + 1, (SELECT last FROM now)) AS s(b)
  LEFT JOIN counts c ON c.b = s.b
 GROUP BY s.b
 ORDER BY s.b

-- name: db_now
SELECT clock_timestamp() AS now
