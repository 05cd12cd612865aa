import { type DomainError, LocationInactiveError, NotFoundError } from '../errors.js'
import type { LocationRefusal } from './writes.js'

/** A write that named a location that does not exist (404) or is inactive (400). */
export const isLocationRefusal = (result: unknown): result is LocationRefusal =>
  typeof result === 'object' &&
  result !== null &&
  'refused' in result &&
  (result.refused === 'location_not_found' || result.refused === 'location_inactive')

export function locationRefusalError({ refused, locationId }: LocationRefusal): DomainError {
  return refused === 'location_not_found' ? new NotFoundError(`No location ${locationId}`) : new LocationInactiveError(locationId)
}
