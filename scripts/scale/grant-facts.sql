-- A grant's facts (GrantFactsQuery), for a random subscriber's latest renewal.
\set u random(0, :subscribers - 1)
SELECT * FROM transactions WHERE app_id = 'app' AND transaction_id = ANY(ARRAY[(3000000000000000 + (:per - 1) * :subscribers + :u)::text]);
SELECT * FROM ownership_bindings WHERE app_id = 'app' AND original_transaction_id = ANY(ARRAY[(2000000000000000 + :u)::text]);
SELECT * FROM subscriptions WHERE app_id = 'app' AND original_transaction_id = ANY(ARRAY[(2000000000000000 + :u)::text]);
SELECT * FROM ownership_claims WHERE app_id = 'app' AND original_transaction_id = ANY(ARRAY[(2000000000000000 + :u)::text]);
