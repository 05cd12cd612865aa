import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { PLACEHOLDER_BASE_URLS, type Config } from '../../config.js'
import { API_PREFIX } from '../api-prefix.js'
import { finishDocument } from '../openapi-document.js'
import { requires, SECURITY_SCHEME } from '../scopes.js'

/** Where the document says the API is served: the deployment's base URLs. */
export type OpenApiOptions = Pick<Config, 'environment' | 'publicBaseUrl' | 'productionBaseUrl' | 'stagingBaseUrl'>

const DESCRIPTION = `Tracks, for each pet, a stock count and a sales status. Orders reserve stock without ever overselling, and a ledger records every change to a quantity.

Every operation needs an API key sent as \`Authorization: Bearer <API_KEY>\`; keys are made with \`petstore keys create\`.
Every error is an \`Error\` object \`{code, message, status}\` whose \`status\` equals the HTTP status; the \`code\` values are listed on the \`Error\` schema.

Limits: request bodies up to 64 KiB; quantities from 0 to 2147483647; petIds over the whole signed 64-bit range, exact in both directions (JSON numbers, not strings: parse them with a big-integer-aware JSON parser).
Order of checks: an unknown path is 404 and a wrong method 405 (with \`Allow\`) before authentication; a key this instance has not verified yet is counted against the per-address rate limit (429); then authentication (401), then the per-key rate limit (429), then validation (400, 413, 415), then a required If-Match (428), then lookup (404), then If-Match (412) or a rule of the store (409: \`insufficient_stock\`, \`invalid_transition\`, \`idempotency_key_reused\`).

Stock writes (updateInventory, placeOrder, updateOrder) are applied in the order they arrive, each committed durably before its answer, and each change to a quantity appends one row to the ledger (listInventoryChanges) in the same transaction. Query parameters are validated like bodies: an undeclared or repeated parameter is 400. Paged listings send \`Link: <…>; rel="next"\` (RFC 8288) while more items remain.

Rate limits (on by default; the operator sets them): per API key, and per client address for keys not yet verified, in fixed windows. Every counted response carries \`RateLimit-Policy\` and \`RateLimit\` (draft-ietf-httpapi-ratelimit-headers); past a limit the answer is 429 \`rate_limited\` with \`Retry-After\`. A 503 may come with \`Retry-After\` too, when the service refuses work for load.

Deprecation: getPetById is deprecated. Every response of it carries \`Deprecation\`, \`Sunset\` and \`Link\` headers, and from its sunset on it answers 410 \`gone\`, before authentication.

Caching: every answer carries \`X-Content-Type-Options: nosniff\`. Answers to authenticated operations carry \`Cache-Control: no-store\`, except the GETs' representations, which carry \`private, no-cache\`: a client may keep them for itself and revalidate them with their ETag.

Entity tags: the GETs and updateInventory answer with a strong \`ETag\` of the exact bytes. \`If-None-Match\` on a GET gives 304 while the representation is unchanged; \`If-Match\` on updateInventory makes the update conditional (412 when the entry has changed).`

/**
 * A server the operator has not named yet: its description says so for people, and `x-placeholder`
 * for tools (a generator or a proxy should not take it for a real address; docs/operations.md).
 */
function server(name: string, url: string, variable: string, isPlaceholder: boolean) {
  return isPlaceholder
    ? { url: `${url}${API_PREFIX}`, description: `${name} (a placeholder until the operator sets ${variable})`, 'x-placeholder': true }
    : { url: `${url}${API_PREFIX}`, description: name }
}

export function servers(config: OpenApiOptions) {
  const list: { url: string; description: string; 'x-placeholder'?: boolean }[] = [
    server('Production', config.productionBaseUrl, 'PRODUCTION_BASE_URL', config.productionBaseUrl === PLACEHOLDER_BASE_URLS.production),
    server('Staging', config.stagingBaseUrl, 'STAGING_BASE_URL', config.stagingBaseUrl === PLACEHOLDER_BASE_URLS.staging),
  ]
  // Unset, "this server" is the relative /v1: right wherever the document is served from.
  const self = `${config.publicBaseUrl}${API_PREFIX}`
  if (!list.some((s) => s.url === self)) list.unshift({ url: self, description: `This server (${config.environment})` })
  return list
}

/**
 * The OpenAPI 3.1 document is generated from the routes' own TypeBox schemas: one source for both.
 * It documents the routes registered after it (every route group depends on it), and serves the
 * document and its reference page under /v1.
 */
export const openApi = fp<OpenApiOptions>(
  async (app, config) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Petstore Inventory API',
          version: '1.0.0',
          description: DESCRIPTION,
          // No public contact exists yet: an address on the reserved example.com, and a name that says so.
          contact: { name: 'Petstore Inventory maintainers (placeholder)', email: 'maintainers@petstore.example.com' },
          license: { name: 'MIT', identifier: 'MIT' },
        },
        servers: servers(config),
        tags: [
          { name: 'inventory', description: 'Stock levels per pet, and the ledger of their changes' },
          { name: 'locations', description: 'Places that hold stock (shops, warehouses), the stock at each, and transfers between them' },
          { name: 'store', description: 'Orders, which reserve stock' },
          { name: 'pets', description: 'The pets themselves (the lookup by id is deprecated), and the report of its calls' },
          { name: 'keys', description: 'API keys and their scopes' },
          { name: 'webhooks', description: 'Signed webhook subscriptions to stock changes' },
        ],
        components: {
          securitySchemes: {
            [SECURITY_SCHEME]: {
              type: 'http',
              scheme: 'bearer',
              description:
                'An API key (psk_…) as a bearer token. The scheme name is case-insensitive. ' +
                'Each operation names the one scope its key needs (`inventory:read`, `inventory:write`, `orders:read`, ' +
                '`orders:write`, `pets:read`, `admin`): a scope grants only what it names. A valid key without it is ' +
                'answered 403 `insufficient_scope`, with `WWW-Authenticate: Bearer error="insufficient_scope", scope="<scope>"`, ' +
                'before the request body is read.',
            },
          },
        },
        security: requires(),
      },
      // Paths are relative to the servers, which all end in /v1.
      transform: ({ schema, url }) => ({ schema, url: url.startsWith(`${API_PREFIX}/`) ? url.slice(API_PREFIX.length) : url }),
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
      transformObject: finishDocument,
    })

    // In a scope of its own, so that only the reference page's requests run the hook below.
    await app.register(async (docs) => {
      // The page's assets are small and served whole: a Range would only open error paths (a 416 past
      // the end) that the API's Error codes do not name.
      docs.addHook('onRequest', (request, _reply, done) => {
        delete request.raw.headers.range
        done()
      })
      await docs.register(swaggerUi, {
        routePrefix: `${API_PREFIX}/docs`,
        uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null },
        // The top bar only offers a URL box and the framework's logo: the page documents this API alone.
        theme: {
          title: 'Petstore Inventory API reference',
          css: [{ filename: 'petstore.css', content: '.swagger-ui .topbar { display: none }' }],
        },
        // Everything the page loads comes from this service (the swagger-ui-dist package).
        staticCSP:
          "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self' data:; object-src 'none'; frame-ancestors 'self'",
      })
    })

    app.get(`${API_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => app.swagger())
  },
  { name: 'petstore-openapi', dependencies: ['petstore-errors', 'petstore-validation', 'petstore-served-paths'] },
)
