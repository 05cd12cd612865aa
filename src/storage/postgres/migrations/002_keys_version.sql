-- The API keys' change counter, moved in the same transaction as every statement that creates,
-- revokes or deletes a key (not by last_used_at updates), so each instance can cache the keys it has
-- verified and check the cache with one read per request.
CREATE TABLE keys_version (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  version   bigint  NOT NULL
);
INSERT INTO keys_version (version) VALUES (0);

CREATE FUNCTION bump_keys_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE keys_version SET version = version + 1;
  RETURN NULL;
END
$$;

CREATE TRIGGER keys_changed
  AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF name, key_hash, revoked_at ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION bump_keys_version();
