-- What each key may do (issue 23): its scopes, space-separated, in the order of SCOPES in
-- src/domain.ts. Keys made before scopes existed (the first key too) keep every scope, so an upgrade
-- breaks no client; the default is then dropped, so every key made from now on names its scopes.
ALTER TABLE api_keys ADD COLUMN scopes text NOT NULL
  DEFAULT 'inventory:read inventory:write orders:read orders:write pets:read admin'
  CHECK (scopes <> '');
ALTER TABLE api_keys ALTER COLUMN scopes DROP DEFAULT;
