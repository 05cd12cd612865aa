-- The same tables as 002, with each `x IN ('a', 'b', …)` CHECK written as `x = 'a' OR x = 'b' OR …`.
-- SQLite codes an IN list of more than two values as an ephemeral table that every INSERT builds
-- afresh (OpenEphemeral, one IdxInsert per value): it made a ledger row cost half as much again,
-- on every PATCH. The comparisons allow exactly the same values. SQLite cannot change a CHECK in
-- place, so each table is rebuilt, rows and indexes as they were (no foreign key names them).

CREATE TABLE inventory_changes_new (
  seq               INTEGER PRIMARY KEY,
  pet_id            INTEGER NOT NULL,
  previous_quantity INTEGER,
  quantity          INTEGER NOT NULL,
  reason            TEXT    NOT NULL
    CHECK (reason = 'adjustment' OR reason = 'import' OR reason = 'order' OR reason = 'cancellation'),
  order_id          INTEGER,
  key_id            INTEGER,
  request_id        TEXT,
  at                TEXT    NOT NULL
) STRICT;
INSERT INTO inventory_changes_new SELECT * FROM inventory_changes;
DROP TABLE inventory_changes;
ALTER TABLE inventory_changes_new RENAME TO inventory_changes;

CREATE TABLE orders_new (
  id         INTEGER PRIMARY KEY,
  pet_id     INTEGER NOT NULL,
  quantity   INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 2147483647),
  status     TEXT    NOT NULL
    CHECK (status = 'placed' OR status = 'approved' OR status = 'delivered' OR status = 'cancelled'),
  placed_at  TEXT    NOT NULL,
  updated_at TEXT    NOT NULL
) STRICT;
INSERT INTO orders_new SELECT * FROM orders;
DROP TABLE orders;
ALTER TABLE orders_new RENAME TO orders;
CREATE INDEX orders_status ON orders (status, id);

CREATE TABLE idempotency_keys_new (
  key_id          INTEGER NOT NULL,
  idempotency_key TEXT    NOT NULL,
  fingerprint     TEXT    NOT NULL,
  outcome         TEXT    NOT NULL
    CHECK (outcome = 'placed' OR outcome = 'not_found' OR outcome = 'insufficient_stock'),
  order_id        INTEGER,
  available       INTEGER,
  created_at      TEXT    NOT NULL,
  PRIMARY KEY (key_id, idempotency_key)
) STRICT;
INSERT INTO idempotency_keys_new SELECT * FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_new RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
