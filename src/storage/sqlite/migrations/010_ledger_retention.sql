-- Issue 25: LEDGER_RETENTION removes the ledger's oldest rows, a prefix at a time (retention.ts). The
-- highest seq removed is kept here, so a reader whose cursor is before it can be told so rather than
-- given a gap. The newest row is never removed: SQLite gives the next seq after the largest present.
CREATE TABLE ledger_retention (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  pruned_through INTEGER NOT NULL
) STRICT;
INSERT INTO ledger_retention (id, pruned_through) VALUES (1, 0);
