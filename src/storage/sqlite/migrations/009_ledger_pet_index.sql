-- Issue 25: one pet's changes (GET /v1/inventory/changes?petId=…, petstore history, a stream with
-- petId) read by this index: a page costs its own rows whatever the ledger's size, and is full
-- (no empty page with a Link onward). The rowid (seq) ends every entry of an SQLite index, so the
-- index on pet_id alone keeps each pet's rows in seq order, both ways. Migration 002 left it out for
-- its cost to PATCH; measured again with group commit (bench/RESULTS.md, issue 25), it cost no
-- measurable PATCH throughput on a small ledger.
CREATE INDEX inventory_changes_pet ON inventory_changes (pet_id);
