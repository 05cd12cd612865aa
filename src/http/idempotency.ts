import { Type } from 'typebox'

/** Idempotency-Key: printable ASCII, as a client generates it (a UUID, typically). */
export const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/

/**
 * The headers of a write that takes an Idempotency-Key (placeOrder, adjustInventory,
 * applyInventoryBatch): `applies` says what a replay does not do again. Header names in their
 * canonical case, as the document shows them; validated by their lower-case names (plugins/validation.ts).
 */
export const idempotencyHeaders = (applies: string) =>
  Type.Object({
    'Idempotency-Key': Type.Optional(
      Type.String({
        pattern: IDEMPOTENCY_KEY.source,
        examples: ['5f0c6d1e-8a4b-4c2d-9e7f-1a2b3c4d5e6f'],
        description:
          'Makes a retry safe: 1 to 255 printable ASCII characters (a UUID, say), scoped to the API key and kept at least 24 hours. ' +
          'A request with the same key and the same body gets the first answer again (status, body and headers, errors included) ' +
          `with \`Idempotent-Replayed: true\`, and ${applies}; the same key with another body is 409 \`idempotency_key_reused\`.`,
      }),
    ),
  })

/** The response header of an answer replayed for an Idempotency-Key. */
export const REPLAYED_HEADER = {
  'Idempotent-Replayed': Type.Literal('true', {
    description: 'Sent when this is the answer to an earlier request with the same Idempotency-Key.',
  }),
}
