-- Issue 39: with tracing on, each ledger row keeps the span of the request that made it, as a W3C
-- traceparent (00-<trace id>-<span id>-<flags>), so that every delivery of the row (a webhook POST,
-- a broker message) is a span linked to that request's trace, whichever process delivers it and
-- however much later. Null with tracing off, for every earlier row, and for the CLI's imports. It is
-- never part of a message or a body: nothing of a request's tracing reaches a subscriber but the
-- delivery's own traceparent header.
ALTER TABLE inventory_changes ADD COLUMN trace_context TEXT;
