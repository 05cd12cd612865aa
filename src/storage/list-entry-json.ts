/**
 * One inventory row as the list's JSON, written by the database itself (standard SQL, the same on
 * SQLite and PostgreSQL): byte for byte what itemJson (src/inventory/inventory.json.ts) writes, which
 * test/operations/large-list checks on both backends. Listing a million entries then hands JavaScript one
 * string (or, on PostgreSQL, raw bytes) per page instead of objects, bigints and strings per entry,
 * which is what keeps the heap flat. The JSON needs no escaping: numbers, and a status from a closed set.
 */
export const LIST_ENTRY_JSON = `'{"petId":' || pet_id || ',"quantity":' || quantity || ',"status":"' || status || '"}'`
