-- A page of the inventory filtered by status (GET /v1/inventory?status=…&limit=…) reads its entries
-- by this index from `after` on, so it costs its own rows, not a scan of the table past every entry of
-- another status: without it, a status few entries have made one page read the whole table, in one
-- synchronous statement. A quantity change leaves the index alone (it holds status and pet_id only).
CREATE INDEX inventory_status ON inventory (status, pet_id);
