-- Issue 46: stock moved by deltas and in batches. Each ledger row of a batch carries the batch's id
-- (batch_id, null for a change made alone); a set or a delta may give the reasons damage and loss;
-- an Idempotency-Key on an adjustment or a batch keeps its answer as JSON (outcome 'answered').
--
-- SQLite cannot change a CHECK in place (defensive mode, which better-sqlite3 turns on, refuses
-- writable_schema), so both tables are rebuilt, rows and indexes as they were: the ledger costs a
-- copy of its rows once (1,000,000 rows: see docs/storage.md). To rebuild it only this once, the
-- CHECK admits the reasons the next two issues write as well: a hold placed, released and expired
-- (reservation, release, expiry), and a transfer between locations (transfer). Each is written by
-- code only once its own issue lands.

CREATE TABLE inventory_changes_new (
  seq               INTEGER PRIMARY KEY,
  pet_id            INTEGER NOT NULL,
  previous_quantity INTEGER,
  quantity          INTEGER NOT NULL,
  reason            TEXT    NOT NULL
    CHECK (reason = 'adjustment' OR reason = 'arrival' OR reason = 'return' OR reason = 'count'
      OR reason = 'damage' OR reason = 'loss'
      OR reason = 'import' OR reason = 'order' OR reason = 'cancellation'
      OR reason = 'reservation' OR reason = 'release' OR reason = 'expiry' OR reason = 'transfer'),
  order_id          INTEGER,
  key_id            INTEGER,
  request_id        TEXT,
  at                TEXT    NOT NULL,
  note              TEXT,
  trace_context     TEXT,
  batch_id          TEXT
) STRICT;
INSERT INTO inventory_changes_new
    (seq, pet_id, previous_quantity, quantity, reason, order_id, key_id, request_id, at, note, trace_context)
  SELECT seq, pet_id, previous_quantity, quantity, reason, order_id, key_id, request_id, at, note, trace_context
  FROM inventory_changes;
DROP TABLE inventory_changes;
ALTER TABLE inventory_changes_new RENAME TO inventory_changes;
CREATE INDEX inventory_changes_reason ON inventory_changes (reason);
CREATE INDEX inventory_changes_pet_span ON inventory_changes (seq >> 17, pet_id);

CREATE TABLE idempotency_keys_new (
  key_id          INTEGER NOT NULL,
  idempotency_key TEXT    NOT NULL,
  fingerprint     TEXT    NOT NULL,
  outcome         TEXT    NOT NULL
    CHECK (outcome = 'placed' OR outcome = 'not_found' OR outcome = 'insufficient_stock' OR outcome = 'answered'),
  order_id        INTEGER,
  available       INTEGER,
  created_at      TEXT    NOT NULL,
  answer          TEXT,
  PRIMARY KEY (key_id, idempotency_key)
) STRICT;
INSERT INTO idempotency_keys_new (key_id, idempotency_key, fingerprint, outcome, order_id, available, created_at)
  SELECT key_id, idempotency_key, fingerprint, outcome, order_id, available, created_at FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_new RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
