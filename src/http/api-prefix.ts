/** The versioned API's path prefix: every operation's route is under it, and every server URL ends in it. */
export const API_PREFIX = '/v1'
