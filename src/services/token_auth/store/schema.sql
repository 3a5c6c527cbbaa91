-- Schema of the token-auth service. Every limit of its records (lengths,
-- uniqueness, roles, providers) is a constraint here, so that the database itself refuses bad rows whatever
-- code path writes them. Tables are STRICT: a column holds only its declared
-- type. Timestamps are Unix seconds.

CREATE TABLE IF NOT EXISTS users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    username      TEXT    NOT NULL UNIQUE CHECK (length(username) BETWEEN 1 AND 50),
    password_hash TEXT    NOT NULL CHECK (length(password_hash) BETWEEN 1 AND 255),
    email         TEXT    UNIQUE CHECK (email IS NULL OR length(email) BETWEEN 3 AND 100),
    role          TEXT    NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'vip', 'admin')),
    created_at    INTEGER NOT NULL DEFAULT (unixepoch()),
    updated_at    INTEGER NOT NULL DEFAULT (unixepoch()),
    -- Carried in every token of the account (claim `ukey`): a token whose key
    -- is not its account's is refused. Written by every INSERT (store/mod.rs).
    token_key     TEXT    NOT NULL DEFAULT (lower(hex(randomblob(16))))
) STRICT;

-- Usernames and emails are unique without regard to ASCII case: `VICTIM01`
-- and `victim01` are one account, `V@E.COM` and `v@e.com` one email. Values
-- are stored as typed; lookups compare lower(...) and so use these indexes.
-- (SQLite's lower() folds ASCII only; usernames are ASCII by rule.) On a
-- database created before these indexes, Store::open names any existing
-- pair that differs only in case instead of failing obscurely.
CREATE UNIQUE INDEX IF NOT EXISTS users_username_lower ON users (lower(username));
CREATE UNIQUE INDEX IF NOT EXISTS users_email_lower ON users (lower(email));

-- "updated_at refreshed on change": any UPDATE that does not set updated_at
-- itself gets it set here. recursive_triggers is off, so this does not re-fire.
CREATE TRIGGER IF NOT EXISTS users_touch_updated_at
AFTER UPDATE ON users FOR EACH ROW WHEN NEW.updated_at IS OLD.updated_at
BEGIN
    UPDATE users SET updated_at = unixepoch() WHERE id = NEW.id;
END;

-- One row per external identity bound to a local user. access_token and
-- refresh_token hold ciphertext (see auth::oauth::cipher), never plain tokens.
-- nickname and avatar_url are what the provider reported at the last sign-in.
CREATE TABLE IF NOT EXISTS user_auth_providers (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id          INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider         TEXT    NOT NULL CHECK (provider IN ('wechat', 'google', 'github')),
    provider_user_id TEXT    NOT NULL CHECK (length(provider_user_id) BETWEEN 1 AND 100),
    nickname         TEXT    CHECK (nickname IS NULL OR length(nickname) <= 100),
    avatar_url       TEXT    CHECK (avatar_url IS NULL OR length(avatar_url) <= 500),
    access_token     TEXT,
    refresh_token    TEXT,
    expires_at       INTEGER,
    created_at       INTEGER NOT NULL DEFAULT (unixepoch()),
    updated_at       INTEGER NOT NULL DEFAULT (unixepoch()),
    UNIQUE (provider, provider_user_id)
) STRICT;

CREATE INDEX IF NOT EXISTS user_auth_providers_user_id ON user_auth_providers (user_id);

CREATE TABLE IF NOT EXISTS token_blacklist (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    token_jti   TEXT    NOT NULL UNIQUE CHECK (length(token_jti) BETWEEN 1 AND 100),
    expired_at  INTEGER NOT NULL,
    created_at  INTEGER NOT NULL DEFAULT (unixepoch())
) STRICT;

-- Pruning deletes by expiry; without this index it would scan the table.
CREATE INDEX IF NOT EXISTS token_blacklist_expired_at ON token_blacklist (expired_at);
