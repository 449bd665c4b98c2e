DROP TABLE IF EXISTS rj, misses;
CREATE TABLE rj(id bigint primary key, state text NOT NULL, attempt_token bigint, lease_expires_at timestamptz, cancel_requested bool default false, touched int default 0, payload jsonb default '{}');
CREATE INDEX rj_running_lease ON rj (lease_expires_at) WHERE state = 'running';
INSERT INTO rj SELECT g, 'running', g, clock_timestamp()+interval '1 hour' FROM generate_series(1,100000) g;
CREATE TABLE misses(n bigint, what text);
