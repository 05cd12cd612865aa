import { PetstoreConnectionError, PetstoreError, PetstoreUnknownOutcomeError } from 'petstore-client'

/** What went wrong, in words a member of staff can act on. */
export function describeProblem(error: unknown): string {
  if (error instanceof PetstoreError) {
    if (error.status === 401) return 'The key was not accepted: it may have been revoked. Sign in again.'
    if (error.code === 'insufficient_scope') return `This key may not do that: ${error.message}`
    return error.message
  }
  if (error instanceof PetstoreUnknownOutcomeError)
    return 'The service did not answer; the change may or may not have been saved. Reload to see.'
  if (error instanceof PetstoreConnectionError) return 'The service cannot be reached. Check the connection and try again.'
  return error instanceof Error ? error.message : String(error)
}
