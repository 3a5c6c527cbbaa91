-- token-auth on PostgreSQL, migration 1: the rules of store/schema.sql (the
-- SQLite schema) as constraints. Runs inside the migration
-- transaction with search_path = token_auth. Timestamps are Unix seconds.

CREATE TABLE users (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    username      TEXT   NOT NULL CHECK (char_length(username) BETWEEN 1 AND 50),
    password_hash TEXT   NOT NULL CHECK (char_length(password_hash) BETWEEN 1 AND 255),
    email         TEXT   CHECK (email IS NULL OR char_length(email) BETWEEN 3 AND 100),
    role          TEXT   NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'vip', 'admin')),
    created_at    BIGINT NOT NULL DEFAULT extract(epoch from now())::bigint,
    updated_at    BIGINT NOT NULL DEFAULT extract(epoch from now())::bigint,
    CONSTRAINT users_username_key UNIQUE (username),
    CONSTRAINT users_email_key UNIQUE (email)
);

-- Unique without regard to case, stored as typed (as in SQLite).
CREATE UNIQUE INDEX users_username_lower ON users (lower(username));
CREATE UNIQUE INDEX users_email_lower ON users (lower(email));

-- "updated_at refreshed on change", unless the UPDATE sets it itself.
CREATE FUNCTION users_touch_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at THEN
        NEW.updated_at := extract(epoch from now())::bigint;
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER users_touch_updated_at BEFORE UPDATE ON users
    FOR EACH ROW EXECUTE FUNCTION users_touch_updated_at();

-- access_token and refresh_token hold ciphertext, never plain tokens.
CREATE TABLE user_auth_providers (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id          BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider         TEXT   NOT NULL CHECK (provider IN ('wechat', 'google', 'github')),
    provider_user_id TEXT   NOT NULL CHECK (char_length(provider_user_id) BETWEEN 1 AND 100),
    nickname         TEXT   CHECK (nickname IS NULL OR char_length(nickname) <= 100),
    avatar_url       TEXT   CHECK (avatar_url IS NULL OR char_length(avatar_url) <= 500),
    access_token     TEXT,
    refresh_token    TEXT,
    expires_at       BIGINT,
    created_at       BIGINT NOT NULL DEFAULT extract(epoch from now())::bigint,
    updated_at       BIGINT NOT NULL DEFAULT extract(epoch from now())::bigint,
    UNIQUE (provider, provider_user_id)
);

CREATE INDEX user_auth_providers_user_id ON user_auth_providers (user_id);

CREATE TABLE token_blacklist (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_jti  TEXT   NOT NULL UNIQUE CHECK (char_length(token_jti) BETWEEN 1 AND 100),
    expired_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL DEFAULT extract(epoch from now())::bigint
);

-- Pruning deletes by expiry.
CREATE INDEX token_blacklist_expired_at ON token_blacklist (expired_at);
