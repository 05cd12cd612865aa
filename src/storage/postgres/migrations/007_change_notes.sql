-- Issue 23: a PATCH gives its reason (arrival, return, count, or adjustment as before) and a note,
-- and its ledger row records both. The new CHECK allows every reason the old one did, so existing
-- rows keep theirs; their note is null. Nothing is removed, so instances of the previous release
-- keep working against this schema during a rolling upgrade (their ledger rows: adjustment, note null).
ALTER TABLE inventory_changes
  DROP CONSTRAINT inventory_changes_reason_check,
  ADD CONSTRAINT inventory_changes_reason_check
    CHECK (reason IN ('adjustment', 'arrival', 'return', 'count', 'import', 'order', 'cancellation')),
  ADD COLUMN note text;

-- As in 004, with each write's reason and note: a batch of PATCHes (the shared commit of concurrent
-- requests) as one call, one round trip, with the inventory_version lock held for no client round
-- trip. Writes apply in array order, each with its ledger row (previous quantity: the write before it
-- in the batch, or the stored one); only writes whose pet has an entry apply, and the call returns
-- those, by position (from 1). The signature changes, so this is a second function beside the old
-- one, which the previous release still calls while instances are replaced; a later release drops it.
CREATE FUNCTION set_inventory_quantities(p_ids bigint[], p_quantities integer[], p_key_ids integer[], p_request_ids text[],
  p_reasons text[], p_notes text[], p_at timestamptz)
RETURNS TABLE (write_ord bigint, write_previous integer, write_status text)
LANGUAGE plpgsql AS $$
DECLARE
  base    bigint;
  applied bigint;
BEGIN
  SELECT last_change INTO base FROM inventory_version FOR UPDATE;
  RETURN QUERY
  WITH w AS (
    SELECT * FROM unnest(p_ids, p_quantities, p_key_ids, p_request_ids, p_reasons, p_notes) WITH ORDINALITY
      AS w(pet_id, quantity, key_id, request_id, reason, note, ord)
  ), a AS (
    SELECT w.ord, w.pet_id, w.quantity, w.key_id, w.request_id, w.reason, w.note, i.status,
      coalesce(lag(w.quantity) OVER (PARTITION BY w.pet_id ORDER BY w.ord), i.quantity) AS previous,
      row_number() OVER (ORDER BY w.ord) AS n,
      row_number() OVER (PARTITION BY w.pet_id ORDER BY w.ord DESC) AS from_last
    FROM w JOIN inventory i ON i.pet_id = w.pet_id
  ), updated AS (
    UPDATE inventory AS i SET quantity = a.quantity FROM a WHERE a.from_last = 1 AND i.pet_id = a.pet_id
  ), logged AS (
    INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, note, key_id, request_id, at)
    SELECT base + a.n, a.pet_id, a.previous, a.quantity, a.reason, a.note, a.key_id, a.request_id, p_at FROM a
  )
  SELECT a.ord, a.previous, a.status FROM a;
  GET DIAGNOSTICS applied = ROW_COUNT;
  UPDATE inventory_version SET last_change = base + applied;
END
$$;
