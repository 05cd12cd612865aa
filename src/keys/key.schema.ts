import { Type } from 'typebox'
import { LOCATION_LIMITS, SCOPES } from '../domain.js'
import { LOCATION_ID, LocationIdSchema } from '../http/location-id.schema.js'
import { Int64IdSchema, Int64Schema } from '../http/int64.schema.js'
import { KEY_NAME_PATTERN, KEY_PATTERN } from './api-key.js'

export const ScopeSchema = Type.Unsafe<(typeof SCOPES)[number]>({
  $id: 'Scope',
  type: 'string',
  enum: [...SCOPES],
  description:
    'What a key may do; each scope grants only what it names: `inventory:read` (list, one entry, the changes feed), ' +
    '`inventory:write` (set a quantity), `orders:read`, `orders:write` (place an order, change its status), ' +
    '`pets:read` (the deprecated pet lookup), `admin` (API keys and the deprecated-lookup report).',
})

const keyFields = {
  id: Int64IdSchema('The key’s id.'),
  name: Type.String({ description: 'The key’s name, unique among active keys.' }),
  scopes: Type.Array(Type.Ref('Scope'), { minItems: 1, description: 'Its scopes, always named (never a wildcard), in a fixed order.' }),
  createdAt: Type.String({ format: 'date-time', description: 'When it was created (RFC 3339, UTC).' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When it last authenticated a request, to the minute; null when never.',
  }),
  locations: Type.Optional(
    Type.Array(LocationIdSchema(LOCATION_ID), {
      minItems: 1,
      description:
        'The locations it is held to, by id: it reads and writes only their stock (docs/api.md, "Keys held to locations"). Absent: every location.',
    }),
  ),
}

const KEY_EXAMPLE = {
  id: 3,
  name: 'warehouse-sync',
  scopes: ['inventory:read', 'inventory:write'],
  createdAt: '2026-11-20T09:30:00.000Z',
  lastUsedAt: '2026-11-26T12:00:00.000Z',
}

export const ApiKeySchema = Type.Object(keyFields, {
  $id: 'ApiKey',
  additionalProperties: false,
  description: 'An active API key. Never its secret, nor the hash the service keeps of it.',
  examples: [KEY_EXAMPLE],
})

export const NewApiKeySchema = Type.Object(
  {
    ...keyFields,
    token: Type.String({
      pattern: KEY_PATTERN.source,
      description: 'The secret, to send as `Authorization: Bearer <token>`. Shown in this answer only: store it now.',
    }),
  },
  {
    $id: 'NewApiKey',
    additionalProperties: false,
    description: 'A key just created, with its token.',
    // A made-up token of the right shape: no key has it.
    examples: [{ ...KEY_EXAMPLE, lastUsedAt: null, token: 'psk_Xq3v9bT0kLmN2pR7sW1yZ4aC6dE8fG0hJ2kL4mN6pQ8' }],
  },
)

export const ApiKeyCreateSchema = Type.Object(
  {
    name: Type.String({
      pattern: KEY_NAME_PATTERN.source,
      description: 'Starts with a letter; up to 64 letters, digits, dots, dashes or underscores; unique among active keys.',
    }),
    scopes: Type.Array(Type.Ref('Scope'), {
      minItems: 1,
      uniqueItems: true,
      description: 'The scopes to grant: at least one, each once. Grant only what the client needs.',
    }),
    locations: Type.Optional(
      Type.Array(LocationIdSchema(LOCATION_ID), {
        minItems: 1,
        maxItems: LOCATION_LIMITS.perKey,
        uniqueItems: true,
        description:
          `Hold the key to these locations (1 to ${LOCATION_LIMITS.perKey}, each active): a shop's till reads and writes only ` +
          'its own stock. Without it, the key reaches every location.',
      }),
    ),
  },
  {
    $id: 'ApiKeyCreate',
    additionalProperties: false,
    description: 'A key to create.',
    examples: [{ name: 'warehouse-sync', scopes: ['inventory:read', 'inventory:write'] }],
  },
)

export const KeyIdParamsSchema = Type.Object({
  id: Int64Schema('The key’s id: a decimal integer in canonical form (keys are numbered up to 2147483647).', { examples: [3n] }),
})
