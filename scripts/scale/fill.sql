-- A deployment's worth of rows in the current schema (psql variables: subscribers, per).
-- Each subscriber holds one monthly subscription renewed :per times: :per transactions and
-- ledger rows each, one subscription row and one ownership binding. Rows as the server writes
-- them (same columns and values), spread over a year of Apple's milliseconds.
\set ON_ERROR_STOP on
TRUNCATE transactions, subscriptions, ownership_bindings, ledger;
\timing on
INSERT INTO transactions (app_id, transaction_id, app_user_id, original_transaction_id, product_id, product_type,
    environment, purchase_date, original_purchase_date, expires_date, quantity, credits, verification_id, created_at)
SELECT 'app', (3000000000000000 + g)::text, 'user-' || (g % :subscribers), (2000000000000000 + g % :subscribers)::text,
    'pro.monthly', 'auto_renewable', 'Production',
    1735689600000 + (g / :subscribers) * 2592000000 + (g % :subscribers) * (2592000000 / :subscribers),
    1735689600000 + (g % :subscribers) * (2592000000 / :subscribers),
    1735689600000 + (g / :subscribers + 1) * 2592000000 + (g % :subscribers) * (2592000000 / :subscribers),
    1, 0, 'v-' || g, 1735689600000 + (g / :subscribers) * 2592000000
FROM generate_series(0, :subscribers * :per - 1) AS g;
INSERT INTO ledger (app_id, app_user_id, product_id, product_type, transaction_id, original_transaction_id, environment,
    purchase_date, event, quantity, price_micros, currency, state, recorded_at)
SELECT app_id, app_user_id, product_id, product_type, transaction_id, original_transaction_id, environment,
    purchase_date, 'purchase', 1, 4990000, 'USD', 'granted', created_at
FROM transactions;
INSERT INTO subscriptions (app_id, original_transaction_id, app_user_id, product_id, environment, latest_transaction_id,
    expires_date, auto_renew_enabled, in_billing_retry, updated_at)
SELECT 'app', (2000000000000000 + u)::text, 'user-' || u, 'pro.monthly', 'Production',
    (3000000000000000 + (:per - 1) * :subscribers + u)::text, 1735689600000 + :per * 2592000000 + u * (2592000000 / :subscribers), true, false, 1735689600000
FROM generate_series(0, :subscribers - 1) AS u;
INSERT INTO ownership_bindings (app_id, original_transaction_id, app_user_id, product_id, bound_at)
SELECT 'app', (2000000000000000 + u)::text, 'user-' || u, 'pro.monthly', 1735689600000
FROM generate_series(0, :subscribers - 1) AS u;
VACUUM ANALYZE transactions, ledger, subscriptions, ownership_bindings;
SELECT relname, reltuples::bigint AS rows, pg_size_pretty(pg_total_relation_size(oid)) AS size
FROM pg_class WHERE relnamespace = current_schema()::regnamespace
  AND relname IN ('transactions', 'ledger', 'subscriptions', 'ownership_bindings') ORDER BY relname;
