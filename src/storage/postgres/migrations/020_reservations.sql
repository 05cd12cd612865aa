-- Issue 47: holds (reservations) of stock for a checkout, as SQLite's 018. Every write of a hold
-- holds the inventory_version lock, as every inventory writer does, and gives ids out after the
-- largest there (max(id) under the lock). Adding a nullable column rewrites nothing, and instances of
-- the previous release, which neither read nor write it, keep working while the next one rolls out.
CREATE TABLE reservations (
  id         bigint      PRIMARY KEY,
  status     text        NOT NULL CHECK (status IN ('active', 'confirmed', 'released', 'expired')),
  expires_at timestamptz NOT NULL,
  reference  text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX reservations_due ON reservations (expires_at) WHERE status = 'active';
CREATE INDEX reservations_status ON reservations (status, id);

CREATE TABLE reservation_lines (
  reservation_id bigint  NOT NULL REFERENCES reservations (id),
  line           integer NOT NULL,
  pet_id         bigint  NOT NULL,
  quantity       integer NOT NULL CHECK (quantity BETWEEN 1 AND 2147483647),
  order_id       bigint,
  PRIMARY KEY (reservation_id, line)
);

ALTER TABLE inventory_changes ADD COLUMN reservation_id bigint;
