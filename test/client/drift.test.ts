// The client cannot drift from the server: its types are generated from the committed openapi.json
// (which test/http/openapi.test.ts holds equal to the served document), and it covers every operation.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { createClient, OPERATIONS } from 'petstore-client'
import { clientTypes, int64Properties } from '../../scripts/client-types.js'

const root = new URL('../../../', import.meta.url)
const document = JSON.parse(readFileSync(new URL('openapi.json', root), 'utf8'))

describe('petstore-client against the OpenAPI document', () => {
  test('When the types are generated from openapi.json, then they equal client/src/generated/openapi.ts (run `npm run client:types`)', async () => {
    const committed = readFileSync(new URL('client/src/generated/openapi.ts', root), 'utf8')
    assert.equal(committed, await clientTypes(document))
  })

  test('When the operations are read, then the client covers exactly the document’s operationIds', () => {
    const documented = Object.values(document.paths as Record<string, Record<string, { operationId?: string }>>)
      .flatMap((item) => Object.values(item).map((operation) => operation.operationId))
      .filter((id): id is string => typeof id === 'string')
      .sort()
    assert.deepEqual(Object.keys(OPERATIONS).sort(), documented)
    // Each method named there exists on a client.
    const api = createClient({ baseUrl: 'http://127.0.0.1:1/v1', token: 'psk_x' }) as unknown as Record<string, Record<string, unknown>>
    for (const [operation, methods] of Object.entries(OPERATIONS)) {
      for (const method of methods) {
        const [group, name] = method.split('.') as [string, string]
        assert.equal(typeof api[group]?.[name], 'function', `${operation}: ${method}`)
      }
    }
  })

  test('When the int64 properties are collected, then every id, seq and petId is one, and no name means two kinds of integer', () => {
    assert.deepEqual(int64Properties(document), [
      'deliveredThrough',
      'fromLocationId',
      'id',
      'keyId',
      'locationId',
      'orderId',
      'petId',
      'reservationId',
      'seq',
      'toLocationId',
    ])
    const clash = {
      components: {
        schemas: { A: { properties: { id: { type: 'integer', format: 'int64' } } }, B: { properties: { id: { type: 'integer' } } } },
      },
    }
    assert.throws(() => int64Properties(clash), /int64 and other integers share property names \(B\.id\)/)
  })
})
