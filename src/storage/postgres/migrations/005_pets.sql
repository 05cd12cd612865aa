-- Pets, as the public Petstore's Pet, without a status: a pet's status is its inventory entry's, so
-- the inventory holds the one status of a pet. photo_urls and tags are JSON arrays the service writes
-- (src/storage/pet-row.ts), read and written only with their pet; jsonb keeps the tags' int64 ids
-- exact (numeric), and the service reads them back as text.
CREATE TABLE pets (
  id            bigint PRIMARY KEY,
  name          text   NOT NULL,
  category_id   bigint,
  category_name text,
  photo_urls    jsonb  NOT NULL CHECK (jsonb_typeof(photo_urls) = 'array'),
  tags          jsonb  NOT NULL CHECK (jsonb_typeof(tags) = 'array'),
  CHECK ((category_id IS NULL) = (category_name IS NULL))
);

-- Calls of the deprecated pet lookup (GET /v1/pets/{petId}) per API key. Each instance counts in
-- memory and adds its counts here now and then, so the instances' flushes add up.
CREATE TABLE deprecated_calls (
  key_id     integer     PRIMARY KEY REFERENCES api_keys (id),
  calls      bigint      NOT NULL CHECK (calls > 0),
  first_call timestamptz NOT NULL,
  last_call  timestamptz NOT NULL
);
