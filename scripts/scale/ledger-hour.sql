-- GET /v1/admin/apps/{app}/ledger for one hour at a random point of the filled year.
\set h random(0, 24 * 30 * :per - 2)
SELECT * FROM ledger WHERE app_id = 'app' AND environment = 'Production'
  AND purchase_date >= 1735689600000 + :h::bigint * 3600000 AND purchase_date < 1735689600000 + (:h + 1)::bigint * 3600000
ORDER BY purchase_date, id;
