-- Issue 25: LEDGER_RETENTION removes the ledger's oldest rows, a prefix at a time (retention.ts). The
-- highest seq removed is kept here, so a reader whose cursor is before it can be told so rather than
-- given a gap. A table of its own, so pruning never waits for the inventory_version lock writers hold.
CREATE TABLE ledger_retention (
  only_row       boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  pruned_through bigint  NOT NULL
);
INSERT INTO ledger_retention (pruned_through) VALUES (0);
