-- Issue 25: one pet's changes by an index whose new entries stay in a small region. Migration 009's
-- index on pet_id put each new row at its pet's place among all of that pet's rows: on a ledger of
-- millions, a leaf page at random per write, written to the WAL and checkpointed back, which cost a
-- PATCH or an order a third of its throughput at 10,000,000 rows (bench/RESULTS.md, "Ledger size").
-- This index is by span first: `seq >> 17`, the ledger cut into spans of 131,072 seqs. New rows all
-- fall in the newest span, whose part of the index (about 600 pages) is written over and over, as a
-- small ledger's whole index is; the older spans' parts are never written again, only read (and
-- removed a span at a time by retention). A pet's page reads its rows span by span, in seq order,
-- each span by (span, pet_id, rowid): src/storage/sqlite/ledger.ts.
DROP INDEX inventory_changes_pet;
CREATE INDEX inventory_changes_pet_span ON inventory_changes (seq >> 17, pet_id);
