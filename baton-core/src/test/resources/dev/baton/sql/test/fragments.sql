-- Statements for SqlTest: a fragment shared by two statements.

-- fragment: evens
-- The even numbers up to :n, left open.
WITH evens AS (
    SELECT g FROM generate_series(1, :n) g WHERE g % 2 = 0

-- name: count_evens
-- include: evens
)
SELECT count(*) FROM evens

-- name: sum_evens_above
-- include: evens
)
SELECT sum(g) FROM evens WHERE g > :above
