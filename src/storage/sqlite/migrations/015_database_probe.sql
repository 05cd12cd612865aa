-- Issue 48: the row the service writes to learn whether writes succeed again after a fault of the
-- database (a full disk, a read-only file): src/storage/sqlite/connection.ts probes with it about
-- once a second while a fault holds, and never otherwise. One row; `probed_at` is when (ISO 8601).
CREATE TABLE database_probe (
  id        INTEGER PRIMARY KEY CHECK (id = 1),
  probed_at TEXT    NOT NULL
) STRICT;
INSERT INTO database_probe (id, probed_at) VALUES (1, '1970-01-01T00:00:00.000Z');
