WITH s AS (SELECT nextval('hx.bseq') AS b)
UPDATE hx.job j SET state = 'succeeded', finished_at = clock_timestamp(), lease_expires_at = NULL
  FROM s WHERE j.id >= s.b AND j.id < s.b + 25 AND (j.state = 'running') IS TRUE;
