-- What each key may do (issue 23): its scopes, space-separated, in the order of SCOPES in
-- src/domain.ts. Keys made before scopes existed (the first key too) keep every scope, so an upgrade
-- breaks no client. The default stays while the previous release may still run beside this one (its
-- `keys create` names no scopes, and made keys with every scope); this release always names them.
ALTER TABLE api_keys ADD COLUMN scopes text NOT NULL
  DEFAULT 'inventory:read inventory:write orders:read orders:write pets:read admin'
  CHECK (scopes <> '');

-- The keys' change counter moves when a key's scopes change too (this release never changes them,
-- but an operator's UPDATE must not leave instances trusting scopes they remembered).
DROP TRIGGER keys_changed ON api_keys;
CREATE TRIGGER keys_changed
  AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF name, key_hash, revoked_at, scopes ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION bump_keys_version();
