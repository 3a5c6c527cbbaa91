-- token-auth on PostgreSQL, migration 2: every account gets a random key
-- that its tokens carry (claim `ukey`); a token whose key is not its
-- account's is refused (a database recreated, an id that names another
-- account). Existing accounts get a key each (the default is evaluated per
-- row); their older tokens carry none and stop working.
ALTER TABLE users
    ADD COLUMN token_key TEXT NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', '');
