-- Issue 25: one pet's changes (GET /v1/inventory/changes?petId=…, petstore history, a stream with
-- petId) read by this index: a page costs its own rows whatever the ledger's size, and is full (no
-- empty page with a Link onward). Built inside the migration's transaction, so inventory writes wait
-- for it; on a large ledger build it beforehand without blocking them:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS inventory_changes_pet ON inventory_changes (pet_id, seq);
-- and this migration then finds it there (docs/deployment.md).
CREATE INDEX IF NOT EXISTS inventory_changes_pet ON inventory_changes (pet_id, seq);
