-- Issue 50: stock in more than one place. A location holds stock; location 1, the default one, is
-- created here and holds every entry's stock, so a store with one location reads and writes exactly
-- what it did before. An entry's quantity stays the pet's stock in all (the specification's list, its
-- cache, every existing reader); `elsewhere` is the part of it at the other locations, whose levels
-- are rows of stock_levels; the default location's stock is quantity - elsewhere, never below 0.
CREATE TABLE locations (
  id         INTEGER PRIMARY KEY,
  name       TEXT    NOT NULL COLLATE NOCASE UNIQUE,
  active     INTEGER NOT NULL CHECK (active = 0 OR active = 1),
  created_at TEXT    NOT NULL,
  updated_at TEXT    NOT NULL
) STRICT;
INSERT INTO locations (id, name, active, created_at, updated_at)
  VALUES (1, 'Default', 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));

ALTER TABLE inventory ADD COLUMN elsewhere INTEGER NOT NULL DEFAULT 0 CHECK (elsewhere >= 0 AND elsewhere <= quantity);

-- A pet's stock at a location other than the default one: a row once it was stocked there.
CREATE TABLE stock_levels (
  pet_id      INTEGER NOT NULL,
  location_id INTEGER NOT NULL REFERENCES locations (id),
  quantity    INTEGER NOT NULL CHECK (quantity BETWEEN 0 AND 2147483647),
  PRIMARY KEY (pet_id, location_id)
) STRICT, WITHOUT ROWID;
-- A location's stock, by pet (GET /v1/locations/{id}/inventory).
CREATE INDEX stock_levels_location ON stock_levels (location_id, pet_id);

-- Where an order's or a hold line's units were taken from, when any came from elsewhere than the
-- default location (absent: all from there): a cancellation, a release, an expiry gives them back there.
CREATE TABLE order_allocations (
  order_id    INTEGER NOT NULL,
  location_id INTEGER NOT NULL,
  quantity    INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 2147483647),
  position    INTEGER NOT NULL,
  PRIMARY KEY (order_id, position)
) STRICT, WITHOUT ROWID;
CREATE TABLE reservation_allocations (
  reservation_id INTEGER NOT NULL,
  line           INTEGER NOT NULL,
  location_id    INTEGER NOT NULL,
  quantity       INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 2147483647),
  position       INTEGER NOT NULL,
  PRIMARY KEY (reservation_id, line, position)
) STRICT, WITHOUT ROWID;

-- A key held to locations reads and writes only their stock; a key with no row here reaches every one.
CREATE TABLE api_key_locations (
  key_id      INTEGER NOT NULL REFERENCES api_keys (id),
  location_id INTEGER NOT NULL REFERENCES locations (id),
  PRIMARY KEY (key_id, location_id)
) STRICT, WITHOUT ROWID;

-- A ledger row's location (null: the default one) and a transfer's id (its two rows share it).
-- Adding nullable columns rewrites nothing.
ALTER TABLE inventory_changes ADD COLUMN location_id INTEGER;
ALTER TABLE inventory_changes ADD COLUMN transfer_id TEXT;
