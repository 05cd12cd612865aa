-- The ledger: one row per change to a quantity, written in the change's own transaction.
-- seq and order ids are given out from counters on the inventory_version row, which every writer
-- locks first and holds until its commit: a transaction can take seqs only after the one before it
-- has committed (PostgreSQL makes a commit visible before it releases its locks), so seqs become
-- visible in increasing order, and a reader polling with `seq > last seen` never skips one that
-- commits later. Rows are never deleted.
ALTER TABLE inventory_version
  ADD COLUMN last_change bigint NOT NULL DEFAULT 0,
  ADD COLUMN last_order  bigint NOT NULL DEFAULT 0;

CREATE TABLE inventory_changes (
  seq               bigint      PRIMARY KEY,
  pet_id            bigint      NOT NULL,
  previous_quantity integer,
  quantity          integer     NOT NULL,
  reason            text        NOT NULL CHECK (reason IN ('adjustment', 'import', 'order', 'cancellation')),
  order_id          bigint,
  key_id            integer,
  request_id        text,
  at                timestamptz NOT NULL
);
-- No index by pet: each change would write a page of it at random (a batch of PATCHes, one page per
-- pet), which cost a third of the PATCH throughput on SQLite. One pet's rows are found by scanning
-- seq ranges (the primary key) in bounded windows instead (see InventoryService).

CREATE TABLE orders (
  id         bigint      PRIMARY KEY,
  pet_id     bigint      NOT NULL,
  quantity   integer     NOT NULL CHECK (quantity BETWEEN 1 AND 2147483647),
  status     text        NOT NULL CHECK (status IN ('placed', 'approved', 'delivered', 'cancelled')),
  placed_at  timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX orders_status ON orders (status, id);

CREATE TABLE idempotency_keys (
  key_id          integer     NOT NULL,
  idempotency_key text        NOT NULL,
  fingerprint     text        NOT NULL,
  outcome         text        NOT NULL CHECK (outcome IN ('placed', 'not_found', 'insufficient_stock')),
  order_id        bigint,
  available       integer,
  created_at      timestamptz NOT NULL,
  PRIMARY KEY (key_id, idempotency_key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- A batch of PATCHes (the shared commit of concurrent requests) as one call: one round trip, with
-- the inventory_version lock held for no client round trip. Writes apply in array order, each with
-- its ledger row (previous quantity: the write before it in the batch, or the stored one); only
-- writes whose pet has an entry apply, and the call returns those, by position (from 1).
DROP FUNCTION set_inventory_quantities(bigint[], integer[]);
CREATE FUNCTION set_inventory_quantities(p_ids bigint[], p_quantities integer[], p_key_ids integer[], p_request_ids text[], p_at timestamptz)
RETURNS TABLE (write_ord bigint, write_previous integer, write_status text)
LANGUAGE plpgsql AS $$
DECLARE
  base    bigint;
  applied bigint;
BEGIN
  SELECT last_change INTO base FROM inventory_version FOR UPDATE;
  RETURN QUERY
  WITH w AS (
    SELECT * FROM unnest(p_ids, p_quantities, p_key_ids, p_request_ids) WITH ORDINALITY AS w(pet_id, quantity, key_id, request_id, ord)
  ), a AS (
    SELECT w.ord, w.pet_id, w.quantity, w.key_id, w.request_id, i.status,
      coalesce(lag(w.quantity) OVER (PARTITION BY w.pet_id ORDER BY w.ord), i.quantity) AS previous,
      row_number() OVER (ORDER BY w.ord) AS n,
      row_number() OVER (PARTITION BY w.pet_id ORDER BY w.ord DESC) AS from_last
    FROM w JOIN inventory i ON i.pet_id = w.pet_id
  ), updated AS (
    UPDATE inventory AS i SET quantity = a.quantity FROM a WHERE a.from_last = 1 AND i.pet_id = a.pet_id
  ), logged AS (
    INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, key_id, request_id, at)
    SELECT base + a.n, a.pet_id, a.previous, a.quantity, 'adjustment', a.key_id, a.request_id, p_at FROM a
  )
  SELECT a.ord, a.previous, a.status FROM a;
  GET DIAGNOSTICS applied = ROW_COUNT;
  UPDATE inventory_version SET last_change = base + applied;
END
$$;
