import { PetstoreConnectionError, PetstoreError, PetstoreUnknownOutcomeError } from 'petstore-client'

/** Whether trying the same again later may work: the service was not reached, or was busy or failing. */
export function mayPass(error: unknown): boolean {
  if (error instanceof PetstoreError) return error.status === 429 || error.status >= 500
  if (error instanceof PetstoreConnectionError || error instanceof PetstoreUnknownOutcomeError) return true
  // A failure said in a page's own words carries the API's as its cause.
  return error instanceof Error && error.cause !== undefined && mayPass(error.cause)
}

/** What went wrong, in words a member of staff can act on. */
export function describeProblem(error: unknown): string {
  if (error instanceof PetstoreError) {
    if (error.status === 401) return 'The key was not accepted: it may have been revoked. Sign in again.'
    if (error.code === 'insufficient_scope') return `This key may not do that: ${error.message}`
    return error.message
  }
  if (error instanceof PetstoreUnknownOutcomeError)
    return 'The service did not answer, so the change may or may not have been saved: check it once the service answers again.'
  if (error instanceof PetstoreConnectionError) return 'The service cannot be reached. Check the connection and try again.'
  return error instanceof Error ? error.message : String(error)
}
