import { DomainError, LocationInactiveError, NotFoundError } from '../errors.js'
import { DEFAULT_LOCATION_ID } from '../domain.js'
import type { LocationRefusal } from './writes.js'

/** A write that named a location that does not exist (404), is inactive (400), or is out of its key's reach (403). */
export const isLocationRefusal = (result: unknown): result is LocationRefusal =>
  typeof result === 'object' &&
  result !== null &&
  'refused' in result &&
  (result.refused === 'location_not_found' || result.refused === 'location_inactive' || result.refused === 'location_out_of_reach')

export function locationRefusalError({ refused, locationId, reach }: LocationRefusal): DomainError {
  switch (refused) {
    case 'location_not_found':
      return new NotFoundError(`No location ${locationId}`)
    case 'location_inactive':
      return new LocationInactiveError(locationId)
    case 'location_out_of_reach':
      return new DomainError('insufficient_scope', outOfReach(locationId, reach ?? []))
  }
}

/** Why a key held to locations cannot write there (403 insufficient_scope, as a missing scope is). */
function outOfReach(locationId: number, reach: readonly number[]): string {
  const held = reach.join(', ')
  // A key held to several locations, the default one not among them, names where it writes.
  if (locationId === DEFAULT_LOCATION_ID && reach.length > 1 && !reach.includes(DEFAULT_LOCATION_ID))
    return `This API key is held to locations ${held}: name one of them (locationId)`
  return `This API key is held to location${reach.length === 1 ? '' : 's'} ${held}; location ${locationId} is out of its reach`
}
