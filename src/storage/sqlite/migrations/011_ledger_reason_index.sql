-- Issue 27: the ledger of one reason (GET /v1/inventory/changes?reason=…, the console's Changes
-- filter) read by this index, so a page costs its own rows however rare the reason. The rowid (seq)
-- ends every entry, so each reason's rows are in seq order both ways, and a new row always lands at
-- the end of its reason's range: a handful of hot pages, unlike the pet index (bench/RESULTS.md).
CREATE INDEX inventory_changes_reason ON inventory_changes (reason);
