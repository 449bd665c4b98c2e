SET synchronous_commit = off;
CREATE TABLE hx.job_history (LIKE hx.job INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
ALTER TABLE hx.job_history ADD PRIMARY KEY (id);
CREATE INDEX job_history_finished ON hx.job_history (finished_at);
CREATE SEQUENCE hx.bseq INCREMENT BY 25;
INSERT INTO hx.job (id, queue, kind, payload, priority, state, run_at, attempt, max_attempts, attempt_token, lease_expires_at, claimed_by, attempted_at)
SELECT g, 'default', 'bench.noop', to_jsonb(g), 50, 'running', now(), 1, 25, g, now() + interval '1 hour', 'node-1', now()
FROM generate_series(1, 4000000) g;
VACUUM ANALYZE hx.job;
