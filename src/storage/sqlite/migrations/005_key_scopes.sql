-- What each key may do (issue 23): its scopes, space-separated, in the order of SCOPES in
-- src/domain.ts. Keys made before scopes existed (the first key too) keep every scope, so an upgrade
-- breaks no client. Every key made from now on names its scopes; SQLite cannot drop a column's
-- default without rebuilding the table (which deprecated_calls references), so the default stays,
-- and the code never relies on it.
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL
  DEFAULT 'inventory:read inventory:write orders:read orders:write pets:read admin'
  CHECK (scopes <> '');
