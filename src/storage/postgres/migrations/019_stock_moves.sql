-- Issue 46: stock moved by deltas and in batches. Each ledger row of a batch carries the batch's id
-- (batch_id, null for a change made alone); a set or a delta may give the reasons damage and loss;
-- an Idempotency-Key on an adjustment or a batch keeps its answer as JSON (outcome 'answered').
--
-- The CHECKs only widen, so they are added NOT VALID: no scan of the ledger, and every row already
-- there passed the narrower one. They admit the reasons the next two issues write as well, a hold
-- placed, released and expired (reservation, release, expiry) and a transfer between locations
-- (transfer), each written by code only once its own issue lands (as SQLite's 016, which must rebuild
-- the table to change a CHECK and so does it once). Adding a nullable column rewrites nothing.
ALTER TABLE inventory_changes
  DROP CONSTRAINT inventory_changes_reason_check,
  ADD CONSTRAINT inventory_changes_reason_check
    CHECK (reason IN ('adjustment', 'arrival', 'return', 'count', 'damage', 'loss', 'import', 'order', 'cancellation',
      'reservation', 'release', 'expiry', 'transfer')) NOT VALID,
  ADD COLUMN batch_id text;

ALTER TABLE idempotency_keys
  DROP CONSTRAINT idempotency_keys_outcome_check,
  ADD CONSTRAINT idempotency_keys_outcome_check
    CHECK (outcome IN ('placed', 'not_found', 'insufficient_stock', 'answered')) NOT VALID,
  ADD COLUMN answer text;

-- As in 017, with the ledger rows' batch ids and the claims' answers. The function of 017 stays for
-- instances of the previous release while they are replaced (they write no batches nor answers).
CREATE FUNCTION apply_stock_plan(
  p_read_change bigint, p_read_order bigint,
  p_pet_ids bigint[], p_pet_quantities integer[], p_pet_statuses text[],
  p_order_ids bigint[], p_order_statuses text[],
  p_claim_key_ids integer[], p_claim_keys text[], p_claim_made bigint[], p_since timestamptz,
  p_quantity_ids bigint[], p_quantities integer[],
  p_new_ids bigint[], p_new_pet_ids bigint[], p_new_quantities integer[], p_new_statuses text[],
  p_moved_ids bigint[], p_moved_statuses text[],
  p_seqs bigint[], p_change_pet_ids bigint[], p_previous integer[], p_change_quantities integer[], p_reasons text[],
  p_change_order_ids bigint[], p_key_ids integer[], p_request_ids text[], p_notes text[], p_trace_contexts text[],
  p_batch_ids text[],
  p_last_change bigint, p_last_order bigint, p_at timestamptz,
  p_stored_key_ids integer[], p_stored_keys text[], p_fingerprints text[], p_outcomes text[], p_stored_order_ids bigint[],
  p_available integer[], p_answers text[])
RETURNS TABLE (applied boolean, change_shift bigint, order_shift bigint)
LANGUAGE plpgsql AS $$
DECLARE
  current_change bigint;
  current_order  bigint;
  dc             bigint;
  dord           bigint;
BEGIN
  SELECT last_change, last_order INTO current_change, current_order FROM inventory_version FOR UPDATE;
  -- Each statement below reads what was committed before the lock was granted (READ COMMITTED).
  IF EXISTS (
       SELECT 1 FROM unnest(p_pet_ids, p_pet_quantities, p_pet_statuses) AS v(pet_id, quantity, status)
         LEFT JOIN inventory AS i ON i.pet_id = v.pet_id
       WHERE (i.quantity, i.status) IS DISTINCT FROM (v.quantity, v.status))
     OR EXISTS (
       SELECT 1 FROM unnest(p_order_ids, p_order_statuses) AS v(id, status)
         LEFT JOIN orders AS o ON o.id = v.id
       WHERE o.status IS DISTINCT FROM v.status)
     OR EXISTS (
       SELECT 1 FROM unnest(p_claim_key_ids, p_claim_keys, p_claim_made) AS v(key_id, idempotency_key, made)
         LEFT JOIN idempotency_keys AS c
           ON c.key_id = v.key_id AND c.idempotency_key = v.idempotency_key AND c.created_at > p_since
       WHERE (extract(epoch FROM c.created_at) * 1000000)::bigint IS DISTINCT FROM v.made)
     OR (current_order <> p_read_order AND EXISTS (SELECT 1 FROM unnest(p_order_ids) AS v(id) WHERE v.id > p_read_order)) THEN
    RETURN QUERY SELECT false, 0::bigint, 0::bigint;
    RETURN;
  END IF;
  dc := current_change - p_read_change;
  dord := current_order - p_read_order;

  UPDATE inventory AS i SET quantity = v.quantity
    FROM unnest(p_quantity_ids, p_quantities) AS v(pet_id, quantity) WHERE i.pet_id = v.pet_id;
  INSERT INTO orders (id, pet_id, quantity, status, placed_at, updated_at)
    SELECT v.id + dord, v.pet_id, v.quantity, v.status, p_at, p_at
    FROM unnest(p_new_ids, p_new_pet_ids, p_new_quantities, p_new_statuses) AS v(id, pet_id, quantity, status);
  -- Orders moved are orders read (placed before the batch): their ids are not shifted.
  UPDATE orders AS o SET status = v.status, updated_at = p_at
    FROM unnest(p_moved_ids, p_moved_statuses) AS v(id, status) WHERE o.id = v.id;
  INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, order_id, key_id, request_id, note,
      trace_context, batch_id, at)
    SELECT v.seq + dc, v.pet_id, v.previous, v.quantity, v.reason,
      CASE WHEN v.order_id > p_read_order THEN v.order_id + dord ELSE v.order_id END,
      v.key_id, v.request_id, v.note, v.trace_context, v.batch_id, p_at
    FROM unnest(p_seqs, p_change_pet_ids, p_previous, p_change_quantities, p_reasons, p_change_order_ids, p_key_ids,
      p_request_ids, p_notes, p_trace_contexts, p_batch_ids) AS v(seq, pet_id, previous, quantity, reason, order_id, key_id,
      request_id, note, trace_context, batch_id);
  INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, outcome, order_id, available, answer, created_at)
    SELECT v.key_id, v.idempotency_key, v.fingerprint, v.outcome,
      CASE WHEN v.order_id > p_read_order THEN v.order_id + dord ELSE v.order_id END, v.available, v.answer, p_at
    FROM unnest(p_stored_key_ids, p_stored_keys, p_fingerprints, p_outcomes, p_stored_order_ids, p_available, p_answers)
      AS v(key_id, idempotency_key, fingerprint, outcome, order_id, available, answer)
  ON CONFLICT (key_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome,
    order_id = excluded.order_id, available = excluded.available, answer = excluded.answer, created_at = excluded.created_at;
  -- Expired claims go a few at a time, as the transaction path does.
  DELETE FROM idempotency_keys WHERE (key_id, idempotency_key) IN
    (SELECT key_id, idempotency_key FROM idempotency_keys WHERE created_at <= p_since ORDER BY created_at LIMIT 100);
  UPDATE inventory_version SET last_change = p_last_change + dc, last_order = p_last_order + dord;
  RETURN QUERY SELECT true, dc, dord;
END
$$;
