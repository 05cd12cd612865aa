-- Issue 37: a restore (`petstore restore --bump-seq N`) or `petstore ledger bump-seq N` moves the
-- ledger's next seq past a jump, so no seq a consumer saw before the restore is ever given out again
-- for a different row. Each jump is kept: the last seq before it (after_seq) and the highest seq it
-- skipped (through_seq); the next seq is above every through_seq and every row's seq
-- (src/storage/sqlite/ledger.ts, lastIssuedSeq), and a cursor in (after_seq, through_seq] is from a
-- history this database no longer holds: the feed and the stream answer it 410 cursor_expired, as they
-- do a cursor before the rows retention removed. `at` is when the jump was made (ISO 8601).
CREATE TABLE ledger_jumps (
  after_seq   INTEGER PRIMARY KEY,
  through_seq INTEGER NOT NULL,
  at          TEXT    NOT NULL,
  CHECK (through_seq > after_seq)
) STRICT;
