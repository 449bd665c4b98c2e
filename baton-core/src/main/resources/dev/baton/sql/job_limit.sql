-- Statements on ${schema}.job_limit: cluster-wide job limits (decision 0019). The claimer reads the
-- limit values inside its claim statement (claim_limited in job.sql); these statements manage the rows.

-- name: upsert
INSERT INTO ${schema}.job_limit (id, queue, kind, metadata_key, max_running, rate_starts, rate_window_ms)
VALUES (:id, :queue, :kind, :metadata_key, :max_running, :rate_starts, :rate_window_ms)
ON CONFLICT (id) DO UPDATE
   SET max_running = excluded.max_running, rate_starts = excluded.rate_starts,
       rate_window_ms = excluded.rate_window_ms, updated_at = clock_timestamp()

-- name: delete
DELETE FROM ${schema}.job_limit WHERE id = :id

-- name: list
SELECT id, queue, kind, metadata_key, max_running, rate_starts, rate_window_ms
  FROM ${schema}.job_limit ORDER BY id
