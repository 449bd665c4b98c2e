\set b random(0, 999)
WITH u AS (UPDATE rj j SET touched = j.touched + 1 FROM unnest(ARRAY(SELECT generate_series(:b*100+1, :b*100+100))::bigint[], ARRAY(SELECT generate_series(:b*100+1,:b*100+100))::bigint[]) AS t(id,token) WHERE j.id=t.id AND j.attempt_token=t.token AND j.state='running' RETURNING j.id) INSERT INTO misses SELECT 100 - count(*), 'join' FROM u HAVING count(*) < 100;
