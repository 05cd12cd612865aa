-- The ledger: one row per change to a quantity, written in the change's own transaction. seq is
-- the rowid, given out in commit order (SQLite has one writer at a time); rows are never deleted.
CREATE TABLE inventory_changes (
  seq               INTEGER PRIMARY KEY,
  pet_id            INTEGER NOT NULL,
  previous_quantity INTEGER,
  quantity          INTEGER NOT NULL,
  reason            TEXT    NOT NULL CHECK (reason IN ('adjustment', 'import', 'order', 'cancellation')),
  order_id          INTEGER,
  key_id            INTEGER,
  request_id        TEXT,
  at                TEXT    NOT NULL
) STRICT;
-- No index by pet: each change would write a page of it at random (a batch of PATCHes, one page per
-- pet), which cost a third of the PATCH throughput on SQLite. One pet's rows are found by scanning
-- seq ranges (the primary key) in bounded windows instead (see InventoryService).

-- Orders reserve stock: placing one takes its quantity from the entry, cancelling gives it back.
CREATE TABLE orders (
  id         INTEGER PRIMARY KEY,
  pet_id     INTEGER NOT NULL,
  quantity   INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 2147483647),
  status     TEXT    NOT NULL CHECK (status IN ('placed', 'approved', 'delivered', 'cancelled')),
  placed_at  TEXT    NOT NULL,
  updated_at TEXT    NOT NULL
) STRICT;
CREATE INDEX orders_status ON orders (status, id);

-- Idempotency-Keys of placements, per API key: what the first request with the key got.
CREATE TABLE idempotency_keys (
  key_id          INTEGER NOT NULL,
  idempotency_key TEXT    NOT NULL,
  fingerprint     TEXT    NOT NULL,
  outcome         TEXT    NOT NULL CHECK (outcome IN ('placed', 'not_found', 'insufficient_stock')),
  order_id        INTEGER,
  available       INTEGER,
  created_at      TEXT    NOT NULL,
  PRIMARY KEY (key_id, idempotency_key)
) STRICT;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
