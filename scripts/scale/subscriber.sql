-- GET /v1/subscribers/{id}: what the read runs, for a random subscriber.
\set u random(0, :subscribers - 1)
SELECT * FROM transactions WHERE app_id = 'app' AND app_user_id = 'user-' || :u ORDER BY purchase_date, transaction_id;
SELECT * FROM subscriptions WHERE app_id = 'app' AND app_user_id = 'user-' || :u ORDER BY original_transaction_id;
SELECT * FROM provisional_grants WHERE app_id = 'app' AND app_user_id = 'user-' || :u;
