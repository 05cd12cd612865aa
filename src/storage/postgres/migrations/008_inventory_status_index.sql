-- A page of the inventory filtered by status (GET /v1/inventory?status=…&limit=…) reads its entries
-- by this index from `after` on, so it costs its own rows, not a scan of the table past every entry of
-- another status. A quantity change leaves it alone (an update of an unindexed column stays HOT).
CREATE INDEX inventory_status ON inventory (status, pet_id);
