-- Issue 37: `petstore ledger bump-seq N` (after a point-in-time recovery) moves the ledger's counter
-- (inventory_version.last_change) past a jump, so no seq a consumer saw before the recovery is ever
-- given out again for a different row. Each jump is kept: the last seq before it (after_seq) and the
-- highest seq it skipped (through_seq, the counter's value after the bump). A cursor in
-- (after_seq, through_seq] is from a history this database no longer holds: the feed and the stream
-- answer it 410 cursor_expired, as they do a cursor before the rows retention removed.
CREATE TABLE ledger_jumps (
  after_seq   bigint      PRIMARY KEY,
  through_seq bigint      NOT NULL,
  at          timestamptz NOT NULL,
  CHECK (through_seq > after_seq)
);
