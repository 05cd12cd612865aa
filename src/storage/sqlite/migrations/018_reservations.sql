-- Issue 47: holds (reservations) of stock for a checkout. A hold takes its lines' units from their
-- entries when it is placed (ledger rows of reason reservation), and gives them back when released
-- or expired (release, expiry), or turns them into orders when confirmed (reason order, no units
-- moved): every such row names the hold (reservation_id; null on every other row, and adding a
-- nullable column rewrites nothing). Times are RFC 3339 UTC text with milliseconds, one width, so
-- their text order is their time order.
CREATE TABLE reservations (
  id         INTEGER PRIMARY KEY,
  status     TEXT    NOT NULL
    CHECK (status = 'active' OR status = 'confirmed' OR status = 'released' OR status = 'expired'),
  expires_at TEXT    NOT NULL,
  reference  TEXT,
  created_at TEXT    NOT NULL,
  updated_at TEXT    NOT NULL
) STRICT;
-- The due holds, found by the expiry sweep without reading any hold that ended: only active ones
-- are in this index, by when they expire.
CREATE INDEX reservations_due ON reservations (expires_at) WHERE status = 'active';
-- A page of one status, by id.
CREATE INDEX reservations_status ON reservations (status, id);

CREATE TABLE reservation_lines (
  reservation_id INTEGER NOT NULL REFERENCES reservations (id),
  line           INTEGER NOT NULL,
  pet_id         INTEGER NOT NULL,
  quantity       INTEGER NOT NULL CHECK (quantity >= 1 AND quantity <= 2147483647),
  -- The order the line became when its hold was confirmed.
  order_id       INTEGER,
  PRIMARY KEY (reservation_id, line)
) STRICT, WITHOUT ROWID;

ALTER TABLE inventory_changes ADD COLUMN reservation_id INTEGER;
