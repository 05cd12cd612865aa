-- Inventory entries: bigint holds every int64 petId exactly (the driver hands it over as text).
CREATE TABLE inventory (
  pet_id   bigint  PRIMARY KEY,
  quantity integer NOT NULL CHECK (quantity >= 0),
  status   text    NOT NULL CHECK (status IN ('available', 'pending', 'sold'))
);

-- API keys: only the SHA-256 of the token is stored. Names are unique among keys still in use.
CREATE TABLE api_keys (
  id           integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name         text        NOT NULL,
  key_hash     bytea       NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL,
  last_used_at timestamptz,
  revoked_at   timestamptz
);

CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at IS NULL;

-- The inventory's change counter. Every statement that writes the inventory moves it in the same
-- transaction (a trigger, so even hand-written SQL counts); instances compare it to their cached list.
CREATE TABLE inventory_version (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  version   bigint  NOT NULL
);
INSERT INTO inventory_version (version) VALUES (0);

CREATE FUNCTION bump_inventory_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE inventory_version SET version = version + 1;
  RETURN NULL;
END
$$;

CREATE TRIGGER inventory_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON inventory
  FOR EACH STATEMENT EXECUTE FUNCTION bump_inventory_version();
