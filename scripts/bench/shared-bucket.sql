-- One token taken from a shared rate-limit bucket, as a PostgreSQL-backed limiter would on each
-- client request (docs/SECURITY.md, "Limits across processes"). Run by scripts/bench/shared-bucket.sh.
\set user random(1, :users)
INSERT INTO bench_buckets (key, tokens, at) VALUES ('user:' || :user, 9, extract(epoch from clock_timestamp()))
ON CONFLICT (key) DO UPDATE SET
    tokens = LEAST(10, bench_buckets.tokens + (extract(epoch from clock_timestamp()) - bench_buckets.at) * 1.0) - 1,
    at = extract(epoch from clock_timestamp())
RETURNING tokens;
