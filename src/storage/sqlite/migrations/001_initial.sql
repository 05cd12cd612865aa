-- Inventory entries: pet_id is the rowid, a signed 64-bit integer, so every int64 petId is stored exactly.
CREATE TABLE inventory (
  pet_id   INTEGER PRIMARY KEY,
  quantity INTEGER NOT NULL CHECK (quantity BETWEEN 0 AND 2147483647),
  status   TEXT    NOT NULL CHECK (status IN ('available', 'pending', 'sold'))
) STRICT;

-- API keys: only the SHA-256 of the token is stored. Names are unique among keys still in use.
CREATE TABLE api_keys (
  id           INTEGER PRIMARY KEY,
  name         TEXT NOT NULL,
  key_hash     BLOB NOT NULL UNIQUE,
  created_at   TEXT NOT NULL,
  last_used_at TEXT,
  revoked_at   TEXT
) STRICT;

CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at IS NULL;
