-- A batch of quantity updates (the shared commit of concurrent PATCHes) as one statement, so it costs
-- one round trip and commits on its own, holding the inventory_version lock for no client round trip.
-- Like every inventory writer it takes that lock first (then the pet rows), so it can never deadlock
-- with an import or another batch. Each petId appears at most once per call.
CREATE FUNCTION set_inventory_quantities(ids bigint[], quantities integer[])
RETURNS TABLE (pet_id bigint, status text)
LANGUAGE sql AS $$
  SELECT version FROM inventory_version FOR UPDATE;
  UPDATE inventory AS i SET quantity = v.quantity
    FROM unnest(ids, quantities) AS v(pet_id, quantity)
    WHERE i.pet_id = v.pet_id
    RETURNING i.pet_id, i.status;
$$;
