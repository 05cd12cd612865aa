-- Issue 23: a PATCH gives its reason (arrival, return, count, or adjustment as before) and a note,
-- and its ledger row records both. The reason CHECK is written as comparisons, not an IN list, for
-- the reason 004 gives (SQLite builds an IN list as an ephemeral table on every INSERT). SQLite
-- cannot change a CHECK in place, so the table is rebuilt, rows as they were (note null), and no
-- index or foreign key names it. 005 is another branch's (keys); a gap in the numbers is harmless.

CREATE TABLE inventory_changes_new (
  seq               INTEGER PRIMARY KEY,
  pet_id            INTEGER NOT NULL,
  previous_quantity INTEGER,
  quantity          INTEGER NOT NULL,
  reason            TEXT    NOT NULL
    CHECK (reason = 'adjustment' OR reason = 'arrival' OR reason = 'return' OR reason = 'count'
      OR reason = 'import' OR reason = 'order' OR reason = 'cancellation'),
  order_id          INTEGER,
  key_id            INTEGER,
  request_id        TEXT,
  at                TEXT    NOT NULL,
  note              TEXT
) STRICT;
INSERT INTO inventory_changes_new (seq, pet_id, previous_quantity, quantity, reason, order_id, key_id, request_id, at)
  SELECT seq, pet_id, previous_quantity, quantity, reason, order_id, key_id, request_id, at FROM inventory_changes;
DROP TABLE inventory_changes;
ALTER TABLE inventory_changes_new RENAME TO inventory_changes;
