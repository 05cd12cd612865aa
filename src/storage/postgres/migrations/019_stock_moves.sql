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

-- A batch of plain adjustments (a delta each, no Idempotency-Key, alone: the group commit's usual
-- load of POST /inventory/{petId}/adjustments) in one call, as set_inventory_quantities does for
-- PATCHes: one round trip, under the inventory_version lock. Each delta applies to what the ones before
-- it left; one that would take its pet below 0 or past 2147483647, or names no entry, is refused and
-- changes nothing (write_outcome says which, write_found what the entry held). The planner's rules
-- (src/stock/planner.ts, changedQuantity) in SQL, for this one shape; test/storage's contract suite
-- holds both to the same answers.
CREATE FUNCTION adjust_inventory_quantities(p_ids bigint[], p_deltas integer[], p_key_ids integer[], p_request_ids text[],
  p_reasons text[], p_notes text[], p_trace_contexts text[], p_at timestamptz)
RETURNS TABLE (write_ord integer, write_outcome text, write_found integer, write_quantity integer, write_status text)
LANGUAGE plpgsql AS $$
DECLARE
  base     bigint;
  held     jsonb := '{}';
  statuses jsonb := '{}';
  had      integer;
  moved    bigint;
  applied  integer := 0;
  seqs     bigint[] := '{}';
  rows_of  integer[] := '{}';
  previous integer[] := '{}';
  results  integer[] := '{}';
BEGIN
  SELECT last_change INTO base FROM inventory_version FOR UPDATE;
  SELECT coalesce(jsonb_object_agg(i.pet_id::text, i.quantity), '{}'), coalesce(jsonb_object_agg(i.pet_id::text, i.status), '{}')
    INTO held, statuses FROM inventory AS i WHERE i.pet_id = ANY (p_ids);
  FOR k IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
    write_ord := k;
    had := (held ->> p_ids[k]::text)::integer;
    IF had IS NULL THEN
      write_outcome := 'not_found'; write_found := NULL; write_quantity := NULL; write_status := NULL;
    ELSE
      moved := had::bigint + p_deltas[k];
      write_found := had;
      write_status := statuses ->> p_ids[k]::text;
      IF moved < 0 THEN
        write_outcome := 'insufficient_stock'; write_quantity := NULL;
      ELSIF moved > 2147483647 THEN
        write_outcome := 'stock_overflow'; write_quantity := NULL;
      ELSE
        write_outcome := 'applied'; write_quantity := moved::integer;
        held := jsonb_set(held, ARRAY[p_ids[k]::text], to_jsonb(moved));
        applied := applied + 1;
        seqs := seqs || (base + applied);
        rows_of := rows_of || k;
        previous := previous || had;
        results := results || moved::integer;
      END IF;
    END IF;
    RETURN NEXT;
  END LOOP;
  IF applied = 0 THEN
    RETURN;
  END IF;
  INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, note, key_id, request_id, trace_context, at)
    SELECT r.seq, p_ids[r.k], r.previous, r.quantity, p_reasons[r.k], p_notes[r.k], p_key_ids[r.k], p_request_ids[r.k],
      p_trace_contexts[r.k], p_at
    FROM unnest(seqs, rows_of, previous, results) AS r(seq, k, previous, quantity);
  UPDATE inventory AS i SET quantity = (held ->> i.pet_id::text)::integer
    WHERE i.pet_id IN (SELECT p_ids[r] FROM unnest(rows_of) AS r);
  UPDATE inventory_version SET last_change = base + applied;
END
$$;
