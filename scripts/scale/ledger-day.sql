-- The same read for one day: the ledger route has no page size, so a day is read whole.
\set d random(0, 30 * :per - 2)
SELECT * FROM ledger WHERE app_id = 'app' AND environment = 'Production'
  AND purchase_date >= 1735689600000 + :d::bigint * 86400000 AND purchase_date < 1735689600000 + (:d + 1)::bigint * 86400000
ORDER BY purchase_date, id;
