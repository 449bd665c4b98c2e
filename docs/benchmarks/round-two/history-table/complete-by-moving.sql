WITH s AS (SELECT nextval('hx.bseq') AS b),
d AS (DELETE FROM hx.job j USING s WHERE j.id >= s.b AND j.id < s.b + 25 AND (j.state = 'running') IS TRUE RETURNING j.*)
INSERT INTO hx.job_history (id, queue, kind, payload, priority, state, run_at, attempt, max_attempts, timeout_ms, attempt_token, lease_expires_at, claimed_by, concurrency_key, idempotency_key, stall_count, cancel_requested, errors, created_at, attempted_at, finished_at, metadata, key_fifo)
SELECT id, queue, kind, payload, priority, 'succeeded', run_at, attempt, max_attempts, timeout_ms, attempt_token, NULL, claimed_by, concurrency_key, idempotency_key, stall_count, cancel_requested, errors, created_at, attempted_at, clock_timestamp(), metadata, key_fifo FROM d;
