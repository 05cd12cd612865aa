-- Webhook subscriptions (issue 24): where each one delivers, its signing secret (kept as it is: the
-- service signs with it, so a hash would not do; the database file is the operator's, 0600), and
-- its delivery state. delivered_through is the durable cursor: every ledger row up to it was
-- answered 2xx. The lease says which process delivers it now; a process that stops renewing it
-- loses it to another after lease_expires_at (milliseconds since the epoch).
CREATE TABLE webhooks (
  id                INTEGER PRIMARY KEY,
  url               TEXT    NOT NULL,
  description       TEXT,
  secret            TEXT    NOT NULL,
  message_tag       TEXT    NOT NULL,
  created_at        TEXT    NOT NULL,
  delivered_through INTEGER NOT NULL CHECK (delivered_through >= 0),
  last_success_at   TEXT,
  failing_since     TEXT,
  failed_attempts   INTEGER NOT NULL DEFAULT 0,
  next_attempt_at   TEXT,
  last_error        TEXT,
  disabled_at       TEXT,
  disabled_reason   TEXT,
  lease_owner       TEXT,
  lease_expires_at  INTEGER
) STRICT;
