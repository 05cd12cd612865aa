-- Issue 46: the index by pet in spans of 16,384 seqs (`seq >> 14`) instead of 131,072. A batch of
-- 1,000 changes over 1,000 pets puts an entry at 1,000 places of the newest span's part of the index:
-- at 131,072 seqs that part grows to about 600 pages, most of which each commit wrote to the WAL
-- again (4.0 µs of CPU a ledger row, 1.6 of it system time, against 1.6 without the index); at 16,384
-- seqs it stays under 80 pages (2.5 µs a row, 0.65 system). One pet's page now crosses eight times as
-- many spans, each an index seek: 611 from one end of a 10,000,000-row ledger to the other
-- (docs/storage.md). Building it reads the whole ledger once: 0.45 s for 1,000,000 rows, 4.8 s for
-- 10,000,000, before the first start of this release listens.
DROP INDEX inventory_changes_pet_span;
CREATE INDEX inventory_changes_pet_span ON inventory_changes (seq >> 14, pet_id);
