-- Issue 27: the ledger of one reason (GET /v1/inventory/changes?reason=…, the console's Changes
-- filter) read by this index, so a page costs its own rows however rare the reason. A new row always
-- lands at the end of its reason's range. Built inside the migration's transaction, so inventory
-- writes wait for it; on a large ledger build it beforehand without blocking them:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS inventory_changes_reason ON inventory_changes (reason, seq);
-- and this migration then finds it there (docs/deployment.md).
CREATE INDEX IF NOT EXISTS inventory_changes_reason ON inventory_changes (reason, seq);
