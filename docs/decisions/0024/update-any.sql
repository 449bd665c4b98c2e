\set b random(0, 999)
WITH u AS (UPDATE rj j SET touched = j.touched + 1 WHERE j.id = ANY(ARRAY(SELECT generate_series(:b*100+1, :b*100+100))::bigint[]) AND j.attempt_token = ANY(ARRAY(SELECT generate_series(:b*100+1,:b*100+100))::bigint[]) AND j.state='running' RETURNING j.id) INSERT INTO misses SELECT 100 - count(*), 'any' FROM u HAVING count(*) < 100;
