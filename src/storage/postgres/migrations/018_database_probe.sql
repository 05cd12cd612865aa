-- Issue 48: the row the service writes to learn whether writes succeed again after a fault of the
-- database (read-only after a failover, a full disk, the connection limit): src/storage/postgres/
-- connection.ts probes with it about once a second while a fault holds, and never otherwise.
CREATE TABLE database_probe (
  id        integer     PRIMARY KEY CHECK (id = 1),
  probed_at timestamptz NOT NULL
);
INSERT INTO database_probe (id, probed_at) VALUES (1, 'epoch');
