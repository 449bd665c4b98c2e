\set b random(0, 999)
UPDATE rj SET lease_expires_at = clock_timestamp() + interval '1 hour' WHERE id BETWEEN :b*100+1 AND :b*100+100;
