-- Issue 39: with tracing on, each ledger row keeps the span of the request that made it, as a W3C
-- traceparent (00-<trace id>-<span id>-<flags>), so that every delivery of the row (a webhook POST,
-- a broker message) is a span linked to that request's trace, whichever instance delivers it and
-- however much later. Null with tracing off, for every earlier row, and for imports. It is never part
-- of a message or a body.
--
-- The two functions that write a stock batch's rows take one array more, the rows' trace contexts;
-- as in 007 and 010 they are new functions beside the old ones, which instances of the previous
-- release still call while they are replaced (their rows: trace_context null); a later release drops them.
ALTER TABLE inventory_changes ADD COLUMN trace_context text;

CREATE FUNCTION set_inventory_quantities(p_ids bigint[], p_quantities integer[], p_key_ids integer[], p_request_ids text[],
  p_reasons text[], p_notes text[], p_trace_contexts text[], p_at timestamptz)
RETURNS TABLE (write_ord bigint, write_previous integer, write_status text)
LANGUAGE plpgsql AS $$
DECLARE
  base    bigint;
  applied bigint;
BEGIN
  SELECT last_change INTO base FROM inventory_version FOR UPDATE;
  RETURN QUERY
  WITH w AS (
    SELECT * FROM unnest(p_ids, p_quantities, p_key_ids, p_request_ids, p_reasons, p_notes, p_trace_contexts) WITH ORDINALITY
      AS w(pet_id, quantity, key_id, request_id, reason, note, trace_context, ord)
  ), a AS (
    SELECT w.ord, w.pet_id, w.quantity, w.key_id, w.request_id, w.reason, w.note, w.trace_context, i.status,
      coalesce(lag(w.quantity) OVER (PARTITION BY w.pet_id ORDER BY w.ord), i.quantity) AS previous,
      row_number() OVER (ORDER BY w.ord) AS n,
      row_number() OVER (PARTITION BY w.pet_id ORDER BY w.ord DESC) AS from_last
    FROM w JOIN inventory i ON i.pet_id = w.pet_id
  ), updated AS (
    UPDATE inventory AS i SET quantity = a.quantity FROM a WHERE a.from_last = 1 AND i.pet_id = a.pet_id
  ), logged AS (
    INSERT INTO inventory_changes (seq, pet_id, previous_quantity, quantity, reason, note, key_id, request_id, trace_context, at)
    SELECT base + a.n, a.pet_id, a.previous, a.quantity, a.reason, a.note, a.key_id, a.request_id, a.trace_context, p_at FROM a
  )
  SELECT a.ord, a.previous, a.status FROM a;
  GET DIAGNOSTICS applied = ROW_COUNT;
  UPDATE inventory_version SET last_change = base + applied;
END
$$;

-- As in 010, with the rows' trace contexts.
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
  p_last_change bigint, p_last_order bigint, p_at timestamptz,
  p_stored_key_ids integer[], p_stored_keys text[], p_fingerprints text[], p_outcomes text[], p_stored_order_ids bigint[],
  p_available integer[])
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
      trace_context, at)
    SELECT v.seq + dc, v.pet_id, v.previous, v.quantity, v.reason,
      CASE WHEN v.order_id > p_read_order THEN v.order_id + dord ELSE v.order_id END,
      v.key_id, v.request_id, v.note, v.trace_context, p_at
    FROM unnest(p_seqs, p_change_pet_ids, p_previous, p_change_quantities, p_reasons, p_change_order_ids, p_key_ids,
      p_request_ids, p_notes, p_trace_contexts) AS v(seq, pet_id, previous, quantity, reason, order_id, key_id, request_id, note,
      trace_context);
  INSERT INTO idempotency_keys (key_id, idempotency_key, fingerprint, outcome, order_id, available, created_at)
    SELECT v.key_id, v.idempotency_key, v.fingerprint, v.outcome,
      CASE WHEN v.order_id > p_read_order THEN v.order_id + dord ELSE v.order_id END, v.available, p_at
    FROM unnest(p_stored_key_ids, p_stored_keys, p_fingerprints, p_outcomes, p_stored_order_ids, p_available)
      AS v(key_id, idempotency_key, fingerprint, outcome, order_id, available)
  ON CONFLICT (key_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint, outcome = excluded.outcome,
    order_id = excluded.order_id, available = excluded.available, created_at = excluded.created_at;
  -- Expired claims go a few at a time, as the transaction path does.
  DELETE FROM idempotency_keys WHERE (key_id, idempotency_key) IN
    (SELECT key_id, idempotency_key FROM idempotency_keys WHERE created_at <= p_since ORDER BY created_at LIMIT 100);
  UPDATE inventory_version SET last_change = p_last_change + dc, last_order = p_last_order + dord;
  RETURN QUERY SELECT true, dc, dord;
END
$$;
