import { Type } from 'typebox'
import { WEBHOOK_LIMITS } from '../domain.js'
import { Int64IdSchema, Int64Schema } from '../http/int64.schema.js'

const time = (description: string) => Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description })
const text = (description: string) => Type.Union([Type.String(), Type.Null()], { description })

const subscriptionFields = {
  id: Int64IdSchema('The subscription’s id.'),
  url: Type.String({
    description: 'Where its messages are POSTed, or the broker they are published to (its password or token shown as `***`).',
  }),
  description: text('What it is for; null when none was given.'),
  createdAt: Type.String({ format: 'date-time', description: 'When it was created (RFC 3339, UTC).' }),
}

const SUBSCRIPTION_EXAMPLE = {
  id: 5,
  url: 'https://hooks.example.com/petstore',
  description: 'Stock changes for the storefront cache',
  createdAt: '2026-11-20T09:35:00.000Z',
}

export const WebhookSchema = Type.Object(
  {
    ...subscriptionFields,
    state: Type.Unsafe<'active' | 'failing' | 'disabled'>({
      type: 'string',
      enum: ['active', 'failing', 'disabled'],
      description:
        '`active`: delivering; `failing`: a message is being retried along the schedule; `disabled`: the schedule ran out ' +
        '(enableWebhook resumes it from its cursor).',
    }),
    deliveredThrough: Int64Schema(
      'The cursor: every ledger row up to this seq was delivered (answered 2xx), or predates the subscription.',
    ),
    lastSuccessAt: time('When a message was last answered 2xx; null when never.'),
    failingSince: time('When the message now being retried first failed; null while deliveries succeed.'),
    failedAttempts: Type.Integer({ minimum: 0, description: 'Failed attempts of the message now being retried.' }),
    nextAttemptAt: time('When that message is tried again; null when no retry waits.'),
    lastError: text('Why the last attempt failed (`HTTP 503`, `no answer within 10000 ms`, …); null after a success.'),
    disabledAt: time('When the subscription was disabled; null unless disabled.'),
    disabledReason: text('Why it was disabled; null unless disabled.'),
  },
  {
    $id: 'Webhook',
    additionalProperties: false,
    description: 'A webhook subscription and where its delivery stands. Never its secret.',
    examples: [
      {
        ...SUBSCRIPTION_EXAMPLE,
        state: 'failing',
        deliveredThrough: 1043n,
        lastSuccessAt: '2026-11-26T11:58:00.000Z',
        failingSince: '2026-11-26T12:00:01.000Z',
        failedAttempts: 2,
        nextAttemptAt: '2026-11-26T12:05:06.000Z',
        lastError: 'HTTP 503',
        disabledAt: null,
        disabledReason: null,
      },
    ],
  },
)

export const NewWebhookSchema = Type.Object(
  {
    ...subscriptionFields,
    deliveredThrough: Int64Schema('Where it starts: the ledger’s end when it was made. Its first message is the next row after this seq.'),
    secret: Type.String({
      pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
      description:
        'The signing secret (Standard Webhooks: `whsec_` and base64 key bytes), to verify each message’s `webhook-signature`. ' +
        'Shown in this answer only: store it now.',
    }),
  },
  {
    $id: 'NewWebhook',
    additionalProperties: false,
    description: 'A subscription just created, with its secret.',
    // A made-up secret of the right shape: no subscription has it.
    examples: [{ ...SUBSCRIPTION_EXAMPLE, deliveredThrough: 1043n, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
  },
)

export const WebhookCreateSchema = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: WEBHOOK_LIMITS.urlLength,
      description:
        'An https URL (http too outside production). Its host must be public: loopback, private, link-local and ' +
        'unique-local addresses are refused, unless the service runs with WEBHOOK_ALLOW_PRIVATE=true. ' +
        'Or a message broker: `nats://[USER:PASSWORD@]HOST:PORT/SUBJECT_PREFIX` (JetStream; each change to ' +
        '`SUBJECT_PREFIX.<petId>`, exactly once, in seq order) or `amqp://USER:PASSWORD@HOST:PORT/VHOST?exchange=NAME&routingKey=KEY` ' +
        '(RabbitMQ, `amqps://` with TLS; persistent, publisher confirms, at least once, in seq order), its HOST:PORT one of ' +
        'the service’s BROKER_ALLOWED_HOSTS. A broker URL’s password is never shown again: listings mask it as `***`.',
    }),
    description: Type.Optional(Type.String({ maxLength: WEBHOOK_LIMITS.descriptionLength, description: 'What it is for.' })),
  },
  {
    $id: 'WebhookCreate',
    additionalProperties: false,
    description: 'A webhook subscription to create.',
    examples: [{ url: 'https://hooks.example.com/petstore', description: 'Stock changes for the storefront cache' }],
  },
)

export const WebhookIdParamsSchema = Type.Object({
  id: Int64Schema('The subscription’s id: a decimal integer in canonical form.', { examples: [5n] }),
})
