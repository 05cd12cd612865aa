import { Type } from 'typebox'
import { DEFAULT_LOCATION_ID, MAX_QUANTITY } from '../domain.js'
import { INT64_NOTE } from './int64.schema.js'

// A location's id and a line's allocations, as every resource's schemas name them (inventory, orders,
// holds, locations): one place, below all of them.

/** Locations are numbered from 1 in a 32-bit column: a larger id names none. */
export const MAX_LOCATION_ID = 2147483647

/**
 * A location named by a body: its id, documented as an int64 like every id of the document (clients
 * read all ids alike), bounded by the column it names.
 */
export const LocationIdSchema = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 1, maximum: MAX_LOCATION_ID, description: `${description} ${INT64_NOTE}`, examples: [4] })

export const LOCATION_ID = `A location's id (${DEFAULT_LOCATION_ID} is the default location).`

const REFUSED = 'An unknown location is 404, an inactive one 400 `location_inactive`.'

/** A write's optional location: where it applies (the default location when absent). */
export const AtLocationSchema = (what: string) =>
  LocationIdSchema(`${what}; the default location (${DEFAULT_LOCATION_ID}) when absent. ${REFUSED}`)

/** An order's or a hold line's optional location: the only one it takes from (where the allocation rule chooses when absent). */
export const TakeFromLocationSchema = (what: string) =>
  LocationIdSchema(
    `Take the ${what}'s units from this location only; without it, the default location when it covers them, else the ` +
      `location with the most stock when that one does, else several (docs/api.md, "Locations"). ${REFUSED}`,
  )

export const AllocationsSchema = Type.Array(
  Type.Object(
    { locationId: LocationIdSchema(LOCATION_ID), quantity: Type.Integer({ minimum: 1, maximum: MAX_QUANTITY }) },
    { additionalProperties: false },
  ),
  {
    minItems: 1,
    examples: [
      [
        { locationId: 1, quantity: 1 },
        { locationId: 4, quantity: 2 },
      ],
    ],
    description:
      'Where the units were taken from, in the order taken: absent when all came from the default location. Cancelling, ' +
      'releasing or expiring gives each back there (to the default location when that one was deactivated since).',
  },
)
