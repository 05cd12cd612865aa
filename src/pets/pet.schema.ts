import { Type } from 'typebox'
import { PET_LIMITS } from '../domain.js'
import { BIG_PET_ID, Int64IdSchema, Int64Schema, PetIdSchema } from '../http/int64.schema.js'

const name = (what: string) =>
  Type.String({ minLength: 1, maxLength: PET_LIMITS.nameLength, description: `${what}, 1 to ${PET_LIMITS.nameLength} characters.` })

export const CategorySchema = Type.Object(
  { id: Int64Schema('Identifier of the category (int64, exact).'), name: name('Name of the category') },
  { $id: 'Category', additionalProperties: false, description: 'A category of pets.', examples: [{ id: 1, name: 'Dogs' }] },
)

export const TagSchema = Type.Object(
  { id: Int64Schema('Identifier of the tag (int64, exact).'), name: name('Name of the tag') },
  { $id: 'Tag', additionalProperties: false, description: 'A tag of a pet.', examples: [{ id: 7, name: 'house-trained' }] },
)

const fields = {
  id: PetIdSchema,
  name: name('Name of the pet'),
  category: Type.Optional(Type.Ref('Category')),
  photoUrls: Type.Array(Type.String({ minLength: 1, maxLength: PET_LIMITS.photoUrlLength }), {
    maxItems: PET_LIMITS.photoUrls,
    description: `Up to ${PET_LIMITS.photoUrls} photo URLs, each 1 to ${PET_LIMITS.photoUrlLength} characters.`,
  }),
  tags: Type.Array(Type.Ref('Tag'), { maxItems: PET_LIMITS.tags, description: `Up to ${PET_LIMITS.tags} tags.` }),
  status: Type.Optional(Type.Ref('PetStatus')),
}

export const PetSchema = Type.Object(fields, {
  $id: 'Pet',
  additionalProperties: false,
  description:
    "A pet, as the public Petstore's Pet. `category` is omitted when the pet has none. `status` is the status of the pet's " +
    'inventory entry (the inventory holds the one status of a pet), omitted when the pet has no inventory entry.',
  examples: [
    {
      id: BIG_PET_ID,
      name: 'Rex',
      category: { id: 1, name: 'Dogs' },
      photoUrls: ['https://images.petstore.example.com/rex-1.jpg'],
      tags: [{ id: 7, name: 'house-trained' }],
      status: 'available',
    },
  ],
})

/**
 * A record of a pets import file, checked with the same validator as request bodies: a Pet whose
 * tags may be left out. Its int64 ids are parsed exactly apart (see import-pets.ts).
 */
export const PetRecordSchema = Type.Object({ ...fields, tags: Type.Optional(fields.tags) }, { additionalProperties: false })

export const DeprecatedCallsSchema = Type.Object(
  {
    keyId: Int64IdSchema('The key’s id.'),
    name: Type.String({ description: 'The key’s name.' }),
    calls: Type.Integer({ minimum: 1, description: 'Its calls of GET /v1/pets/{petId}, flushed so far.' }),
    firstCall: Type.String({ format: 'date-time', description: 'Its first call (RFC 3339, UTC, milliseconds).' }),
    lastCall: Type.String({ format: 'date-time', description: 'Its last call flushed.' }),
  },
  {
    $id: 'DeprecatedCalls',
    additionalProperties: false,
    description: 'One key’s calls of the deprecated pet lookup.',
    examples: [{ keyId: 3, name: 'legacy-shop', calls: 412, firstCall: '2026-01-02T08:15:00.000Z', lastCall: '2026-11-26T11:59:30.000Z' }],
  },
)
