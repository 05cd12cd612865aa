import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { API_PREFIX, API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import { errorResponses } from '../http/error.schema.js'
import { sendJsonText } from '../http/json-reply.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { requires } from '../http/scopes.js'
import { webhookJson } from './webhook.json.js'
import { WebhookIdParamsSchema } from './webhook.schema.js'
import type { WebhooksService } from './webhooks.service.js'

export interface WebhooksRoutesOptions {
  webhooks: WebhooksService
}

const DELIVERY =
  'Each ledger row committed after the subscription was created becomes one message: a POST of ' +
  '`{"type":"inventory.changed","timestamp":"<the change’s time>","data":<the row, as listInventoryChanges writes it>}` ' +
  'with the Standard Webhooks headers `webhook-id` (`msg_<tag>_<seq>`: the same on every retry), `webhook-timestamp` and ' +
  '`webhook-signature` (`v1,<base64 HMAC-SHA256 of id.timestamp.body>` under the secret). Messages go in seq order, at ' +
  'least once: each 2xx is recorded durably before the next message is sent, so a crash sends again only the message ' +
  'in flight; deduplicate by webhook-id. A failure (not 2xx, no answer within ' +
  'WEBHOOK_TIMEOUT_MS, refused) is retried along WEBHOOK_RETRY_SCHEDULE (5s, 5m, 30m, 2h, 5h, 10h, 10h by default) ' +
  'with jitter, holding back only that subscription; after the last retry the subscription is disabled.'

/** Webhook subscriptions (admin); registered under API_PREFIX. */
const routes: FastifyPluginAsyncTypebox<WebhooksRoutesOptions> = async (app, { webhooks }) => {
  app.addHook('onRequest', app.authenticate)
  documentRateLimits(app)

  app.get(
    '/webhooks',
    {
      schema: {
        operationId: 'listWebhooks',
        security: requires('admin'),
        summary: 'List the webhook subscriptions',
        description: 'Every subscription, by id, with where its delivery stands. Never a secret.',
        tags: ['webhooks'],
        response: {
          200: Type.Array(Type.Ref('Webhook'), { description: 'The subscriptions, by id.' }),
          ...errorResponses(400, 401, 403, 500, 503),
        },
      },
    },
    async (_request, reply) => sendJsonText(reply, `[${(await webhooks.list()).map(webhookJson).join(',')}]`),
  )

  app.post(
    '/webhooks',
    {
      schema: {
        operationId: 'createWebhook',
        security: requires('admin'),
        summary: 'Subscribe a URL to stock changes',
        description: `${DELIVERY} The subscription starts at the ledger’s current end. Its secret is in this answer only.`,
        tags: ['webhooks'],
        body: Type.Ref('WebhookCreate'),
        response: {
          201: Type.Ref('NewWebhook', {
            description: 'The subscription, with its secret.',
            headers: { Location: Type.String({ description: "The subscription's URL, path-absolute: `/v1/webhooks/{id}`." }) },
          }),
          ...errorResponses(400, 401, 403, 409, 413, 415, 500, 503),
          400: Type.Ref('Error', {
            description:
              'The body is invalid (code `invalid_request`), or the URL is one the service will not deliver to (code ' +
              '`destination_refused`: not http(s), https only in production, credentials in it, or a non-public address).',
          }),
          409: Type.Ref('Error', {
            description: 'There are 100 subscriptions already (code `webhook_limit_reached`); nothing was created.',
          }),
        },
      },
    },
    async (request, reply) => {
      const { url, description } = request.body as { url: string; description?: string }
      const { webhook, secret } = await webhooks.create(url, description ?? null)
      reply.code(201).header('location', `${API_PREFIX}/webhooks/${webhook.id}`)
      const { id, url: shown, description: about, createdAt, deliveredThrough } = webhook
      return { id, url: shown, description: about, createdAt, deliveredThrough, secret }
    },
  )

  app.get(
    '/webhooks/:id',
    {
      schema: {
        operationId: 'getWebhook',
        security: requires('admin'),
        summary: 'Get a webhook subscription',
        description: 'One subscription, with where its delivery stands (state, cursor, failures); never its secret.',
        tags: ['webhooks'],
        params: WebhookIdParamsSchema,
        response: {
          200: Type.Ref('Webhook', { description: 'The subscription.' }),
          ...errorResponses(400, 401, 403, 404, 414, 500, 503),
        },
      },
    },
    async (request, reply) => sendJsonText(reply, webhookJson(await webhooks.get(request.params.id))),
  )

  app.delete(
    '/webhooks/:id',
    {
      schema: {
        operationId: 'deleteWebhook',
        security: requires('admin'),
        summary: 'Delete a webhook subscription',
        description:
          'No message is sent to it afterwards, except one already in flight (or, from another instance that delivers it, at ' +
          'most one more before that instance sees the deletion).',
        tags: ['webhooks'],
        params: WebhookIdParamsSchema,
        response: {
          204: Type.Null({ description: 'Deleted.' }),
          ...errorResponses(400, 401, 403, 404, 414, 500, 503),
        },
      },
    },
    async (request, reply) => {
      await webhooks.remove(request.params.id)
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/webhooks/:id/enable',
    {
      schema: {
        operationId: 'enableWebhook',
        security: requires('admin'),
        summary: 'Resume a disabled or failing webhook subscription',
        description:
          'Clears the subscription’s failures: delivery resumes from its cursor now, the message that failed first, with the ' +
          'retry schedule from its start; a subscription disabled as `cursor_expired` (rows after its cursor were removed ' +
          'from the ledger) resumes from the ledger’s end instead. Takes no body.',
        tags: ['webhooks'],
        params: WebhookIdParamsSchema,
        response: {
          200: Type.Ref('Webhook', { description: 'The subscription, enabled.' }),
          ...errorResponses(400, 401, 403, 404, 414, 500, 503),
        },
      },
    },
    async (request, reply) => sendJsonText(reply, webhookJson(await webhooks.enable(request.params.id))),
  )
}

export const webhooksRoutes = fp(routes, {
  name: 'petstore-webhooks-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES],
  encapsulate: true,
})
