export { type ChangesQuery, createClient, OPERATIONS, type PageOptions, type PetstoreClient, type Tagged } from './client.js'
export {
  type ErrorCode,
  PetstoreConnectionError,
  PetstoreCursorExpiredError,
  PetstoreError,
  PetstoreUnknownOutcomeError,
  WebhookVerificationError,
} from './errors.js'
export type { StreamOptions } from './stream.js'
export type { CallOptions, ClientOptions } from './transport.js'
export type * from './types.js'
export { type VerifyOptions, type WebhookHeaders, type WebhookMessage, verifyWebhook } from './webhooks.js'
