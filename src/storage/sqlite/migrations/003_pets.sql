-- Pets, as the public Petstore's Pet, without a status: a pet's status is its inventory entry's, so
-- the inventory holds the one status of a pet. id is the rowid, a signed 64-bit integer (every int64
-- id is exact). photo_urls and tags are JSON arrays the service writes (src/storage/pet-row.ts), read
-- and written only with their pet.
CREATE TABLE pets (
  id            INTEGER PRIMARY KEY,
  name          TEXT    NOT NULL,
  category_id   INTEGER,
  category_name TEXT,
  photo_urls    TEXT    NOT NULL CHECK (json_type(photo_urls) = 'array'),
  tags          TEXT    NOT NULL CHECK (json_type(tags) = 'array'),
  CHECK ((category_id IS NULL) = (category_name IS NULL))
) STRICT;

-- Calls of the deprecated pet lookup (GET /v1/pets/{petId}) per API key. Each instance counts in
-- memory and adds its counts here now and then, so the instances' flushes add up. Times are RFC 3339
-- UTC with milliseconds, so min() and max() on the text order them.
CREATE TABLE deprecated_calls (
  key_id     INTEGER PRIMARY KEY REFERENCES api_keys (id),
  calls      INTEGER NOT NULL CHECK (calls > 0),
  first_call TEXT    NOT NULL,
  last_call  TEXT    NOT NULL
) STRICT;
