import { InvalidInputError, PreconditionRequiredError } from '../errors.js'
import { entityTag, ifMatch, parseTags } from '../entity-tags.js'
import type { Precondition } from '../stock/writes.js'
import { itemJson } from './inventory.json.js'

/**
 * The precondition an If-Match header sets on a write, checked by storage against the entry inside
 * the write's transaction; undefined when there is none. Throws for a value that is not `*` or a list
 * of entity tags (400: ignoring it would turn a conditional write into an unconditional one), and
 * for a missing one when `required` (428).
 */
export function writePrecondition(header: string | undefined, required: boolean): Precondition | undefined {
  if (header === undefined) {
    if (required) throw new PreconditionRequiredError('Updates need If-Match: GET the entry and send its ETag')
    return undefined
  }
  if (parseTags(header) === undefined) throw new InvalidInputError('If-Match must be * or a list of entity tags')
  return (current) => ifMatch(header, entityTag(itemJson(current)))
}
