import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { exactInt64, registerExactJsonParser } from '../../src/http/exact-json.js'

/** What exactInt64 reads from a body's `petId`, and from its `changes[].petId`, as the service parses it. */
async function readPetIds(payload: string): Promise<string[]> {
  const app = Fastify()
  registerExactJsonParser(app)
  app.post('/', async (request) => {
    const body = request.body as { petId?: unknown; changes?: object[] }
    const ids = [exactInt64(body, 'petId'), ...(body.changes ?? []).map((c) => exactInt64(c, 'petId'))]
    return ids.map((id) => (id === undefined ? 'none' : id.toString()))
  })
  const reply = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload })
  await app.close()
  assert.equal(reply.statusCode, 200, reply.body)
  return reply.json()
}

test('plain integers up to 15 digits are read exactly without the reviver, and those beyond from their text', async () => {
  assert.deepEqual(await readPetIds('{"petId": 123456789012345}'), ['123456789012345'])
  assert.deepEqual(await readPetIds('{"petId": -42, "changes": [{"petId": 7}, {"petId": 0}]}'), ['-42', '7', '0'])
  // 16 digits and more: a double cannot hold 2^53 + 1, the text can.
  assert.deepEqual(await readPetIds('{"petId": 9007199254740993}'), ['9007199254740993'])
  assert.deepEqual(await readPetIds('{"petId": 9223372036854775807, "changes": [{"petId": 1}]}'), ['9223372036854775807', '1'])
  assert.deepEqual(await readPetIds('{"petId": 9223372036854775808}'), ['none'])
})

test('a number that is not a canonical integer is never taken for one, on either path', async () => {
  for (const text of ['1.0', '1e2', '1E2', '-0', '10.5', '1.0000000000000001'])
    assert.deepEqual(await readPetIds(`{"petId": ${text}}`), ['none'], text)
  // A fraction elsewhere in the body (here in a note) sends the whole body through the reviver.
  assert.deepEqual(await readPetIds('{"petId": 5, "note": "1.5 kg", "changes": [{"petId": 6}]}'), ['5', '6'])
  assert.deepEqual(await readPetIds('{"petId": "5"}'), ['none'])
})
