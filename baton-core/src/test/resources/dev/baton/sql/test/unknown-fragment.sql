-- For SqlTest: a statement that includes a fragment defined only below it.

-- name: early
-- include: late
SELECT 1

-- fragment: late
WITH x AS (SELECT 1)
