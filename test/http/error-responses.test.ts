import Database from 'better-sqlite3'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { ERROR_CODES, codeForStatus, type ErrorCode } from '../../src/errors.js'
import { openStorage } from '../../src/storage/open-storage.js'
import { BACKENDS, createKey, parseExact, seed, useResources, type Response, type TestServer } from '../support/helpers.js'
import { holdSqliteRecoveryLock } from '../support/sqlite-locks.js'
import { TcpProxy } from '../support/tcp-proxy.js'

/**
 * Walks every error response the OpenAPI document declares, makes the service send it for real, and
 * checks the status, the Error shape and the code. The phases run in order: requests that need a
 * healthy database, then the database unavailable, then the database broken. The 503s come from a
 * server of their own, made to find its database unavailable quickly; 429s from a second server on the
 * same database, whose rate limit allows one request per key, and 410s from a third, configured past
 * the pet lookup's sunset. Every response of the deprecated pet lookup must carry its deprecation
 * headers too.
 */
type Phase = 'healthy' | 'limited' | 'sunset' | 'pruned' | 'unavailable' | 'broken' | 'slow'
interface Trigger {
  phase: Phase
  send: (server: TestServer, token: string) => Promise<Response>
  /** The code, where the status has several (the 409s of domain rules). */
  code?: ErrorCode
}

const json = { 'content-type': 'application/json' }
/** The limited server allows one request per key and window: the second is refused. */
const twice = (send: () => Promise<Response>) => send().then(send)
const anyTag = { 'if-match': '*' }
const bigBody = (field: string) => `{"${field}":1,"p":"${'x'.repeat(70_000)}"}`
const longId = '9'.repeat(9000)
/** Pet 2 holds one unit: an order for it placed, then cancelled, leaves the stock as it was. */
async function cancelledOrder(s: TestServer, token: string): Promise<string> {
  const placed = await s.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 1 } })
  assert.equal(placed.status, 201, placed.text)
  const cancelled = await s.request('PATCH', `/v1/store/orders/${placed.body.id}`, { token, body: { status: 'cancelled' } })
  assert.equal(cancelled.status, 200, cancelled.text)
  return String(placed.body.id)
}
/** A hold of pet 2's one unit, released at once (so the stock is as it was): the id of a hold that ended. */
async function releasedHold(s: TestServer, token: string): Promise<string> {
  const placed = await s.request('POST', '/v1/store/reservations', { token, body: { lines: [{ petId: 2, quantity: 1 }] } })
  assert.equal(placed.status, 201, placed.text)
  const released = await s.request('POST', `/v1/store/reservations/${placed.body.id}/release`, { token })
  assert.equal(released.status, 200, released.text)
  return String(placed.body.id)
}
/** The triggers of a hold's action (extend, release, confirm), which differ only in path and body. */
function holdAction(action: 'extend' | 'release' | 'confirm'): Record<number, Trigger> {
  const body = action === 'extend' ? { expiresInSeconds: 60 } : undefined
  const path = (id: string) => `/v1/store/reservations/${id}/${action}`
  const send = (s: TestServer, id: string, token?: string) =>
    s.request('POST', path(id), { ...(token === undefined ? {} : { token }), ...(body === undefined ? {} : { body }) })
  return {
    403: lacking('POST', path('1'), notOther, body),
    400: { phase: 'healthy', send: (s, token) => s.request('POST', path('x'), { token, ...(body === undefined ? {} : { body }) }) },
    401: { phase: 'healthy', send: (s) => send(s, '1') },
    404: { phase: 'healthy', send: (s, token) => send(s, '424242', token) },
    409: { phase: 'healthy', code: 'reservation_released', send: async (s, token) => send(s, await releasedHold(s, token), token) },
    413: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', path('1'), { token, rawBody: bigBody('expiresInSeconds'), headers: json }),
    },
    414: { phase: 'healthy', send: (s, token) => send(s, longId, token) },
    415: {
      phase: 'healthy',
      send: (s, token) =>
        s.request('POST', path('1'), { token, rawBody: 'expiresInSeconds=60', headers: { 'content-type': 'text/plain' } }),
    },
    429: { phase: 'limited', send: (s, token) => twice(() => send(s, '424242', token)) },
    500: { phase: 'broken', send: (s, token) => send(s, '1', token) },
    503: { phase: 'unavailable', send: (s, token) => send(s, '1', token) },
  }
}
/**
 * A request to the change stream that must be refused. A stream that opened would never end, so it
 * is never awaited: a 200 is returned as soon as its headers come (and fails the check), the body cut.
 */
async function refusedStream(s: TestServer, query: string, options: { token?: string; headers?: Record<string, string> }) {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  const res = await fetch(`${s.baseUrl}/v1/inventory/changes/stream${query}`, { headers, signal: AbortSignal.timeout(30_000) })
  if (res.status < 400) {
    await res.body?.cancel()
    return { status: res.status, headers: res.headers, text: `a stream opened (${res.status})`, body: undefined }
  }
  const text = await res.text()
  const isJson = res.headers.get('content-type')?.startsWith('application/json')
  return { status: res.status, headers: res.headers, text, body: isJson && text ? parseExact(text) : undefined }
}
/** Refused before the stream would open, whatever the ledger holds. */
const badEventId = { 'last-event-id': 'x' }
/** The limit on subscriptions (WEBHOOK_LIMITS.subscriptions). */
const MAX_WEBHOOKS = 100
/**
 * Creates subscriptions up to the limit, asks for one more (409), then deletes the ones it created, so
 * that no later change is ever delivered to them.
 */
async function oneWebhookTooMany(s: TestServer, token: string): Promise<Response> {
  const existing = await s.request('GET', '/v1/webhooks', { token })
  assert.equal(existing.status, 200, existing.text)
  const created: string[] = []
  for (let n = existing.body.length; n < MAX_WEBHOOKS; n++) {
    const res = await s.request('POST', '/v1/webhooks', { token, body: { url: `https://example.com/hook-${n}` } })
    assert.equal(res.status, 201, res.text)
    created.push(String(res.body.id))
  }
  const refused = await s.request('POST', '/v1/webhooks', { token, body: { url: `https://example.com/hook-${MAX_WEBHOOKS}` } })
  for (const id of created) {
    const deleted = await s.request('DELETE', `/v1/webhooks/${id}`, { token })
    assert.equal(deleted.status, 204, deleted.text)
  }
  return refused
}
const hook = { url: 'https://example.com/hook' }
/** Refused at once (400 destination_refused): nothing is created. */
const privateHook = { url: 'http://127.0.0.1/hook' }
/**
 * Keys without the scope an operation needs, made in before(): `admin` holds only admin (refused
 * everywhere else), `reader` only inventory:read (refused on admin operations).
 */
const narrow = { admin: '', reader: '' }
const lacking = (method: string, path: string, token: () => string, body?: unknown): Trigger => ({
  phase: 'healthy',
  send: (s) => s.request(method, path, { token: token(), ...(body === undefined ? {} : { body }) }),
})
const notAdmin = () => narrow.reader
const notOther = () => narrow.admin
/**
 * Locations made in before(), besides the default one (id 1), which holds pets 1 and 2's stock:
 * `open`, active and empty, and `closed`, deactivated (a write naming it is 400 location_inactive).
 */
const places = { open: 0, closed: 0 }
const OPEN_NAME = 'Harbour Street'
/** A transfer of pet 1's units (5 at the default location) to the open location, or to `to`. */
const move = (quantity: number, to = places.open) => ({ fromLocationId: 1, toLocationId: to, quantity })
const transfer = (s: TestServer, token: string | undefined, body: unknown, petId: string = '1') =>
  s.request('POST', `/v1/inventory/${petId}/transfers`, { ...(token === undefined ? {} : { token }), body })
/**
 * A unit of pet 1 moved to the open location, a deactivation of it asked for (refused: it holds
 * stock), and the unit moved back, so that the stock is as it was: the refusal.
 */
async function deactivatingStocked(s: TestServer, token: string): Promise<Response> {
  const there = await transfer(s, token, move(1))
  assert.equal(there.status, 200, there.text)
  const refused = await s.request('PATCH', `/v1/locations/${places.open}`, { token, body: { active: false } })
  const back = await transfer(s, token, { fromLocationId: places.open, toLocationId: 1, quantity: 1 })
  assert.equal(back.status, 200, back.text)
  return refused
}
const TRIGGERS: Record<string, Record<number, Trigger>> = {
  'GET /inventory': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/inventory?limit=0', { token }) },
    403: lacking('GET', '/v1/inventory', notOther),
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/inventory') },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/inventory', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/inventory', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/inventory', { token }) },
  },
  'GET /inventory/{petId}': {
    403: lacking('GET', '/v1/inventory/1', notOther),
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/inventory/01', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/inventory/1') },
    404: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/inventory/424242', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('GET', `/v1/inventory/${'9'.repeat(9000)}`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/inventory/1', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/inventory/1', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/inventory/1', { token }) },
  },
  'GET /pets/{petId}': {
    403: lacking('GET', '/v1/pets/1', notOther),
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/pets/01', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/pets/1') },
    404: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/pets/424242', { token }) },
    410: { phase: 'sunset', send: (s, token) => s.request('GET', '/v1/pets/1', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('GET', `/v1/pets/${'9'.repeat(9000)}`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/pets/1', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/pets/1', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/pets/1', { token }) },
  },
  // The walk's server runs with REQUIRE_IF_MATCH=true, so that 428 can be provoked too.
  'PATCH /inventory/{petId}': {
    403: lacking('PATCH', '/v1/inventory/1', notOther, { quantity: 1 }),
    400: { phase: 'healthy', send: (s, token) => s.request('PATCH', '/v1/inventory/1', { token, body: { quantity: -1 } }) },
    401: { phase: 'healthy', send: (s) => s.request('PATCH', '/v1/inventory/1', { body: { quantity: 1 } }) },
    404: {
      phase: 'healthy',
      send: (s, token) => s.request('PATCH', '/v1/inventory/424242', { token, body: { quantity: 1 }, headers: anyTag }),
    },
    409: {
      phase: 'healthy',
      code: 'quantity_mismatch',
      send: (s, token) => s.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 1, expectedQuantity: 999 }, headers: anyTag }),
    },
    412: {
      phase: 'healthy',
      send: (s, token) => s.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 1 }, headers: { 'if-match': '"stale"' } }),
    },
    413: {
      phase: 'healthy',
      send: (s, token) =>
        s.request('PATCH', '/v1/inventory/1', { token, rawBody: `{"quantity":1,"p":"${'x'.repeat(70_000)}"}`, headers: json }),
    },
    414: {
      phase: 'healthy',
      send: (s, token) => s.request('PATCH', `/v1/inventory/${'9'.repeat(9000)}`, { token, body: { quantity: 1 } }),
    },
    415: {
      phase: 'healthy',
      send: (s, token) =>
        s.request('PATCH', '/v1/inventory/1', { token, rawBody: 'quantity=1', headers: { 'content-type': 'text/plain' } }),
    },
    428: { phase: 'healthy', send: (s, token) => s.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 1 } }) },
    429: {
      phase: 'limited',
      send: (s, token) => twice(() => s.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 5 } })),
    },
    500: {
      phase: 'broken',
      send: (s, token) => s.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 2 }, headers: anyTag }),
    },
    503: {
      phase: 'unavailable',
      send: (s, token) => s.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 3 }, headers: anyTag }),
    },
  },
  'POST /inventory/{petId}/adjustments': {
    403: lacking('POST', '/v1/inventory/1/adjustments', notOther, { delta: 1 }),
    400: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/inventory/1/adjustments', { token, body: { delta: 0 } }) },
    401: { phase: 'healthy', send: (s) => s.request('POST', '/v1/inventory/1/adjustments', { body: { delta: 1 } }) },
    404: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/inventory/424242/adjustments', { token, body: { delta: 1 } }) },
    409: {
      phase: 'healthy',
      code: 'insufficient_stock',
      send: (s, token) => s.request('POST', '/v1/inventory/2/adjustments', { token, body: { delta: -1000 } }),
    },
    413: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', '/v1/inventory/1/adjustments', { token, rawBody: bigBody('delta'), headers: json }),
    },
    414: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', `/v1/inventory/${longId}/adjustments`, { token, body: { delta: 1 } }),
    },
    415: {
      phase: 'healthy',
      send: (s, token) =>
        s.request('POST', '/v1/inventory/1/adjustments', { token, rawBody: 'delta=1', headers: { 'content-type': 'text/plain' } }),
    },
    429: {
      phase: 'limited',
      send: (s, token) => twice(() => s.request('POST', '/v1/inventory/2/adjustments', { token, body: { delta: -1000 } })),
    },
    500: { phase: 'broken', send: (s, token) => s.request('POST', '/v1/inventory/1/adjustments', { token, body: { delta: 1 } }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('POST', '/v1/inventory/1/adjustments', { token, body: { delta: 1 } }) },
  },
  'POST /inventory/batch': {
    403: lacking('POST', '/v1/inventory/batch', notOther, { changes: [{ petId: 1, delta: 1 }] }),
    400: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/inventory/batch', { token, body: { changes: [] } }) },
    401: { phase: 'healthy', send: (s) => s.request('POST', '/v1/inventory/batch', { body: { changes: [{ petId: 1, delta: 1 }] } }) },
    404: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', '/v1/inventory/batch', { token, body: { changes: [{ petId: 424242, delta: 1 }] } }),
    },
    409: {
      phase: 'healthy',
      code: 'insufficient_stock',
      send: (s, token) =>
        s.request('POST', '/v1/inventory/batch', {
          token,
          body: {
            changes: [
              { petId: 1, delta: 1 },
              { petId: 2, delta: -1000 },
            ],
          },
        }),
    },
    // Past the batch's own limit, 2 MiB (BATCH_BODY_LIMIT).
    413: {
      phase: 'healthy',
      send: (s, token) =>
        s.request('POST', '/v1/inventory/batch', { token, rawBody: `{"changes":[],"p":"${'x'.repeat(2_200_000)}"}`, headers: json }),
    },
    415: {
      phase: 'healthy',
      send: (s, token) =>
        s.request('POST', '/v1/inventory/batch', { token, rawBody: 'changes', headers: { 'content-type': 'text/plain' } }),
    },
    429: {
      phase: 'limited',
      send: (s, token) => twice(() => s.request('POST', '/v1/inventory/batch', { token, body: { changes: [] } })),
    },
    500: {
      phase: 'broken',
      send: (s, token) => s.request('POST', '/v1/inventory/batch', { token, body: { changes: [{ petId: 1, delta: 1 }] } }),
    },
    503: {
      phase: 'unavailable',
      send: (s, token) => s.request('POST', '/v1/inventory/batch', { token, body: { changes: [{ petId: 1, delta: 1 }] } }),
    },
  },
  'GET /inventory/changes': {
    403: lacking('GET', '/v1/inventory/changes', notOther),
    410: {
      phase: 'pruned',
      send: (s, token) => s.request('GET', '/v1/inventory/changes?after=0', { token }),
      code: 'cursor_expired',
    },
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/inventory/changes?limit=0', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/inventory/changes') },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/inventory/changes', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/inventory/changes', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/inventory/changes', { token }) },
  },
  // The stream answers an error before it opens: a bad Last-Event-ID is refused before anything is read, and
  // after=0 makes it read the ledger's rows (inventory_changes, dropped when broken) before it answers. With
  // the database unavailable it declares no 503: it is told to reconnect (test/changes/stream-reconnect.test.ts).
  'GET /inventory/changes/stream': {
    400: { phase: 'healthy', send: (s, token) => refusedStream(s, '', { token, headers: badEventId }) },
    410: { phase: 'pruned', send: (s, token) => refusedStream(s, '?after=0', { token }), code: 'cursor_expired' },
    401: { phase: 'healthy', send: (s) => refusedStream(s, '', {}) },
    403: { phase: 'healthy', send: (s) => refusedStream(s, '', { token: notOther() }) },
    429: { phase: 'limited', send: (s, token) => twice(() => refusedStream(s, '', { token, headers: badEventId })) },
    500: { phase: 'broken', send: (s, token) => refusedStream(s, '?after=0', { token }) },
  },
  'GET /store/orders': {
    403: lacking('GET', '/v1/store/orders', notOther),
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/store/orders?status=lost', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/store/orders') },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/store/orders', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/store/orders', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/store/orders', { token }) },
  },
  'POST /store/orders': {
    403: lacking('POST', '/v1/store/orders', notOther, { petId: 2, quantity: 1 }),
    400: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 0 } }) },
    401: { phase: 'healthy', send: (s) => s.request('POST', '/v1/store/orders', { body: { petId: 2, quantity: 1 } }) },
    404: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/store/orders', { token, body: { petId: 424242, quantity: 1 } }) },
    409: {
      phase: 'healthy',
      code: 'insufficient_stock',
      send: (s, token) => s.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 1000 } }),
    },
    413: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', '/v1/store/orders', { token, rawBody: bigBody('petId'), headers: json }),
    },
    415: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', '/v1/store/orders', { token, rawBody: 'petId=2', headers: { 'content-type': 'text/plain' } }),
    },
    429: {
      phase: 'limited',
      send: (s, token) => twice(() => s.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 1000 } })),
    },
    500: { phase: 'broken', send: (s, token) => s.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 1 } }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('POST', '/v1/store/orders', { token, body: { petId: 2, quantity: 1 } }) },
  },
  'GET /store/reservations': {
    403: lacking('GET', '/v1/store/reservations', notOther),
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/store/reservations?status=lost', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/store/reservations') },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/store/reservations', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/store/reservations', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/store/reservations', { token }) },
  },
  'POST /store/reservations': {
    403: lacking('POST', '/v1/store/reservations', notOther, { lines: [{ petId: 2, quantity: 1 }] }),
    400: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/store/reservations', { token, body: { lines: [] } }) },
    401: { phase: 'healthy', send: (s) => s.request('POST', '/v1/store/reservations', { body: { lines: [{ petId: 2, quantity: 1 }] } }) },
    404: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', '/v1/store/reservations', { token, body: { lines: [{ petId: 424242, quantity: 1 }] } }),
    },
    409: {
      phase: 'healthy',
      code: 'insufficient_stock',
      send: (s, token) => s.request('POST', '/v1/store/reservations', { token, body: { lines: [{ petId: 2, quantity: 1000 }] } }),
    },
    413: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', '/v1/store/reservations', { token, rawBody: bigBody('lines'), headers: json }),
    },
    415: {
      phase: 'healthy',
      send: (s, token) =>
        s.request('POST', '/v1/store/reservations', { token, rawBody: 'lines=2', headers: { 'content-type': 'text/plain' } }),
    },
    429: {
      phase: 'limited',
      send: (s, token) =>
        twice(() => s.request('POST', '/v1/store/reservations', { token, body: { lines: [{ petId: 2, quantity: 1000 }] } })),
    },
    500: {
      phase: 'broken',
      send: (s, token) => s.request('POST', '/v1/store/reservations', { token, body: { lines: [{ petId: 2, quantity: 1 }] } }),
    },
    503: {
      phase: 'unavailable',
      send: (s, token) => s.request('POST', '/v1/store/reservations', { token, body: { lines: [{ petId: 2, quantity: 1 }] } }),
    },
  },
  'GET /store/reservations/{reservationId}': {
    403: lacking('GET', '/v1/store/reservations/1', notOther),
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/store/reservations/x', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/store/reservations/1') },
    404: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/store/reservations/424242', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('GET', `/v1/store/reservations/${longId}`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/store/reservations/1', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/store/reservations/1', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/store/reservations/1', { token }) },
  },
  'POST /store/reservations/{reservationId}/extend': holdAction('extend'),
  'POST /store/reservations/{reservationId}/release': holdAction('release'),
  'POST /store/reservations/{reservationId}/confirm': holdAction('confirm'),
  'GET /store/orders/{orderId}': {
    403: lacking('GET', '/v1/store/orders/1', notOther),
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/store/orders/x', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/store/orders/1') },
    404: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/store/orders/424242', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('GET', `/v1/store/orders/${longId}`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/store/orders/1', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/store/orders/1', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/store/orders/1', { token }) },
  },
  'PATCH /store/orders/{orderId}': {
    403: lacking('PATCH', '/v1/store/orders/1', notOther, { status: 'approved' }),
    400: { phase: 'healthy', send: (s, token) => s.request('PATCH', '/v1/store/orders/1', { token, body: { status: 'lost' } }) },
    401: { phase: 'healthy', send: (s) => s.request('PATCH', '/v1/store/orders/1', { body: { status: 'approved' } }) },
    404: { phase: 'healthy', send: (s, token) => s.request('PATCH', '/v1/store/orders/424242', { token, body: { status: 'approved' } }) },
    409: {
      phase: 'healthy',
      code: 'invalid_transition',
      send: async (s, token) =>
        s.request('PATCH', `/v1/store/orders/${await cancelledOrder(s, token)}`, { token, body: { status: 'approved' } }),
    },
    413: {
      phase: 'healthy',
      send: (s, token) => s.request('PATCH', '/v1/store/orders/1', { token, rawBody: bigBody('status'), headers: json }),
    },
    414: {
      phase: 'healthy',
      send: (s, token) => s.request('PATCH', `/v1/store/orders/${longId}`, { token, body: { status: 'approved' } }),
    },
    415: {
      phase: 'healthy',
      send: (s, token) =>
        s.request('PATCH', '/v1/store/orders/1', { token, rawBody: 'status=approved', headers: { 'content-type': 'text/plain' } }),
    },
    429: {
      phase: 'limited',
      send: (s, token) => twice(() => s.request('PATCH', '/v1/store/orders/424242', { token, body: { status: 'approved' } })),
    },
    500: { phase: 'broken', send: (s, token) => s.request('PATCH', '/v1/store/orders/1', { token, body: { status: 'approved' } }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('PATCH', '/v1/store/orders/1', { token, body: { status: 'approved' } }) },
  },
  'GET /locations': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/locations?foo=1', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/locations') },
    403: lacking('GET', '/v1/locations', notOther),
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/locations', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/locations', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/locations', { token }) },
  },
  'POST /locations': {
    400: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/locations', { token, body: { name: '' } }) },
    401: { phase: 'healthy', send: (s) => s.request('POST', '/v1/locations', { body: { name: 'Quay Road' } }) },
    403: lacking('POST', '/v1/locations', notAdmin, { name: 'Quay Road' }),
    // The open location's name, case aside.
    409: {
      phase: 'healthy',
      code: 'location_name_taken',
      send: (s, token) => s.request('POST', '/v1/locations', { token, body: { name: OPEN_NAME.toUpperCase() } }),
    },
    413: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/locations', { token, rawBody: bigBody('name'), headers: json }) },
    415: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', '/v1/locations', { token, rawBody: 'name=x', headers: { 'content-type': 'text/plain' } }),
    },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('POST', '/v1/locations', { token, body: { name: '' } })) },
    500: { phase: 'broken', send: (s, token) => s.request('POST', '/v1/locations', { token, body: { name: 'Broken Lane' } }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('POST', '/v1/locations', { token, body: { name: 'Down Lane' } }) },
  },
  'GET /locations/{locationId}': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/locations/x', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/locations/1') },
    403: lacking('GET', '/v1/locations/1', notOther),
    // An int64, past the largest location id (2147483647): no location has it.
    404: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/locations/2147483648', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('GET', `/v1/locations/${longId}`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/locations/424242', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/locations/1', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/locations/1', { token }) },
  },
  'PATCH /locations/{locationId}': {
    // The default location is never deactivated.
    400: { phase: 'healthy', send: (s, token) => s.request('PATCH', '/v1/locations/1', { token, body: { active: false } }) },
    401: { phase: 'healthy', send: (s) => s.request('PATCH', '/v1/locations/1', { body: { name: 'Default' } }) },
    403: lacking('PATCH', '/v1/locations/1', notAdmin, { name: 'Default' }),
    404: { phase: 'healthy', send: (s, token) => s.request('PATCH', '/v1/locations/424242', { token, body: { name: 'Nowhere' } }) },
    409: { phase: 'healthy', code: 'location_not_empty', send: deactivatingStocked },
    413: {
      phase: 'healthy',
      send: (s, token) => s.request('PATCH', '/v1/locations/1', { token, rawBody: bigBody('name'), headers: json }),
    },
    414: { phase: 'healthy', send: (s, token) => s.request('PATCH', `/v1/locations/${longId}`, { token, body: { name: 'Default' } }) },
    415: {
      phase: 'healthy',
      send: (s, token) =>
        s.request('PATCH', '/v1/locations/1', { token, rawBody: 'name=Default', headers: { 'content-type': 'text/plain' } }),
    },
    429: {
      phase: 'limited',
      send: (s, token) => twice(() => s.request('PATCH', '/v1/locations/424242', { token, body: { name: 'Nowhere' } })),
    },
    500: { phase: 'broken', send: (s, token) => s.request('PATCH', '/v1/locations/1', { token, body: { name: 'Default' } }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('PATCH', '/v1/locations/1', { token, body: { name: 'Default' } }) },
  },
  'GET /locations/{locationId}/inventory': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/locations/1/inventory?limit=0', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/locations/1/inventory') },
    403: lacking('GET', '/v1/locations/1/inventory', notOther),
    404: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/locations/424242/inventory', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('GET', `/v1/locations/${longId}/inventory`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/locations/1/inventory', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/locations/1/inventory', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/locations/1/inventory', { token }) },
  },
  'GET /inventory/{petId}/locations': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/inventory/01/locations', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/inventory/1/locations') },
    403: lacking('GET', '/v1/inventory/1/locations', notOther),
    404: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/inventory/424242/locations', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('GET', `/v1/inventory/${longId}/locations`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/inventory/1/locations', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/inventory/1/locations', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/inventory/1/locations', { token }) },
  },
  'POST /inventory/{petId}/transfers': {
    // To the closed location: nothing moves.
    400: { phase: 'healthy', code: 'location_inactive', send: (s, token) => transfer(s, token, move(1, places.closed)) },
    401: { phase: 'healthy', send: (s) => transfer(s, undefined, move(1)) },
    403: { phase: 'healthy', send: (s) => transfer(s, notOther(), move(1)) },
    404: { phase: 'healthy', send: (s, token) => transfer(s, token, move(1), '424242') },
    409: { phase: 'healthy', code: 'insufficient_stock', send: (s, token) => transfer(s, token, move(1000)) },
    413: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', '/v1/inventory/1/transfers', { token, rawBody: bigBody('quantity'), headers: json }),
    },
    414: { phase: 'healthy', send: (s, token) => transfer(s, token, move(1), longId) },
    415: {
      phase: 'healthy',
      send: (s, token) =>
        s.request('POST', '/v1/inventory/1/transfers', { token, rawBody: 'quantity=1', headers: { 'content-type': 'text/plain' } }),
    },
    429: { phase: 'limited', send: (s, token) => twice(() => transfer(s, token, move(1000))) },
    500: { phase: 'broken', send: (s, token) => transfer(s, token, move(1)) },
    503: { phase: 'unavailable', send: (s, token) => transfer(s, token, move(1)) },
  },
  'GET /keys': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/keys?foo=1', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/keys') },
    403: lacking('GET', '/v1/keys', notAdmin),
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/keys', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/keys', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/keys', { token }) },
  },
  'POST /keys': {
    400: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/keys', { token, body: { name: 'ok', scopes: ['everything'] } }) },
    401: { phase: 'healthy', send: (s) => s.request('POST', '/v1/keys', { body: { name: 'ok', scopes: ['admin'] } }) },
    403: lacking('POST', '/v1/keys', notAdmin, { name: 'ok', scopes: ['admin'] }),
    409: {
      phase: 'healthy',
      code: 'key_name_taken',
      send: (s, token) => s.request('POST', '/v1/keys', { token, body: { name: 'errors', scopes: ['admin'] } }),
    },
    413: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/keys', { token, rawBody: bigBody('name'), headers: json }) },
    415: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', '/v1/keys', { token, rawBody: 'name=x', headers: { 'content-type': 'text/plain' } }),
    },
    429: {
      phase: 'limited',
      send: (s, token) => twice(() => s.request('POST', '/v1/keys', { token, body: { name: '1bad', scopes: ['admin'] } })),
    },
    500: { phase: 'broken', send: (s, token) => s.request('POST', '/v1/keys', { token, body: { name: 'broken', scopes: ['admin'] } }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('POST', '/v1/keys', { token, body: { name: 'down', scopes: ['admin'] } }) },
  },
  'GET /keys/current': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/keys/current?foo=1', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/keys/current') },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/keys/current', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/keys/current', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/keys/current', { token }) },
  },
  'GET /keys/{id}': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/keys/x', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/keys/1') },
    403: lacking('GET', '/v1/keys/1', notAdmin),
    404: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/keys/424242', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('GET', `/v1/keys/${longId}`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/keys/424242', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/keys/1', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/keys/1', { token }) },
  },
  'DELETE /keys/{id}': {
    400: { phase: 'healthy', send: (s, token) => s.request('DELETE', '/v1/keys/x', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('DELETE', '/v1/keys/424242') },
    403: lacking('DELETE', '/v1/keys/424242', notAdmin),
    404: { phase: 'healthy', send: (s, token) => s.request('DELETE', '/v1/keys/424242', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('DELETE', `/v1/keys/${longId}`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('DELETE', '/v1/keys/424242', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('DELETE', '/v1/keys/424242', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('DELETE', '/v1/keys/424242', { token }) },
  },
  'GET /deprecations': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/deprecations?foo=1', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/deprecations') },
    403: lacking('GET', '/v1/deprecations', notAdmin),
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/deprecations', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/deprecations', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/deprecations', { token }) },
  },
  'GET /webhooks': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/webhooks?foo=1', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/webhooks') },
    403: lacking('GET', '/v1/webhooks', notAdmin),
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/webhooks', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/webhooks', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/webhooks', { token }) },
  },
  'POST /webhooks': {
    400: {
      phase: 'healthy',
      code: 'destination_refused',
      send: (s, token) => s.request('POST', '/v1/webhooks', { token, body: privateHook }),
    },
    401: { phase: 'healthy', send: (s) => s.request('POST', '/v1/webhooks', { body: hook }) },
    403: lacking('POST', '/v1/webhooks', notAdmin, hook),
    409: { phase: 'healthy', code: 'webhook_limit_reached', send: oneWebhookTooMany },
    413: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/webhooks', { token, rawBody: bigBody('url'), headers: json }) },
    415: {
      phase: 'healthy',
      send: (s, token) => s.request('POST', '/v1/webhooks', { token, rawBody: 'url=x', headers: { 'content-type': 'text/plain' } }),
    },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('POST', '/v1/webhooks', { token, body: privateHook })) },
    500: { phase: 'broken', send: (s, token) => s.request('POST', '/v1/webhooks', { token, body: hook }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('POST', '/v1/webhooks', { token, body: hook }) },
  },
  'GET /webhooks/{id}': {
    400: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/webhooks/x', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('GET', '/v1/webhooks/1') },
    403: lacking('GET', '/v1/webhooks/1', notAdmin),
    404: { phase: 'healthy', send: (s, token) => s.request('GET', '/v1/webhooks/424242', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('GET', `/v1/webhooks/${longId}`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('GET', '/v1/webhooks/424242', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('GET', '/v1/webhooks/1', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('GET', '/v1/webhooks/1', { token }) },
  },
  'DELETE /webhooks/{id}': {
    400: { phase: 'healthy', send: (s, token) => s.request('DELETE', '/v1/webhooks/x', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('DELETE', '/v1/webhooks/424242') },
    403: lacking('DELETE', '/v1/webhooks/424242', notAdmin),
    404: { phase: 'healthy', send: (s, token) => s.request('DELETE', '/v1/webhooks/424242', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('DELETE', `/v1/webhooks/${longId}`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('DELETE', '/v1/webhooks/424242', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('DELETE', '/v1/webhooks/424242', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('DELETE', '/v1/webhooks/424242', { token }) },
  },
  'POST /webhooks/{id}/enable': {
    400: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/webhooks/x/enable', { token }) },
    401: { phase: 'healthy', send: (s) => s.request('POST', '/v1/webhooks/424242/enable') },
    403: lacking('POST', '/v1/webhooks/424242/enable', notAdmin),
    404: { phase: 'healthy', send: (s, token) => s.request('POST', '/v1/webhooks/424242/enable', { token }) },
    414: { phase: 'healthy', send: (s, token) => s.request('POST', `/v1/webhooks/${longId}/enable`, { token }) },
    429: { phase: 'limited', send: (s, token) => twice(() => s.request('POST', '/v1/webhooks/424242/enable', { token })) },
    500: { phase: 'broken', send: (s, token) => s.request('POST', '/v1/webhooks/424242/enable', { token }) },
    503: { phase: 'unavailable', send: (s, token) => s.request('POST', '/v1/webhooks/424242/enable', { token }) },
  },
}

/**
 * Sends raw bytes, keeping the connection open (a request cut short must not look ended), and reads
 * the answer until the service closes the connection: for what the HTTP server itself answers.
 */
function rawExchange(s: TestServer, raw: string): Promise<Response> {
  const { hostname, port } = new URL(s.baseUrl)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    let out = ''
    socket.setTimeout(30_000, () => socket.destroy(new Error('no answer within 30 s')))
    socket.on('data', (d) => (out += d))
    socket.on('error', reject)
    socket.on('close', () => {
      const [head = '', text = ''] = out.split('\r\n\r\n', 2)
      const [statusLine = '', ...lines] = head.split('\r\n')
      const headers = new Headers(
        lines.map((line): [string, string] => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]),
      )
      const isJson = headers.get('content-type')?.startsWith('application/json')
      resolve({ status: Number(statusLine.split(' ')[1]), headers, text, body: isJson && text ? parseExact(text) : undefined })
    })
    socket.write(raw)
  })
}

/**
 * What any operation's request may be answered before a route of the operation runs, each sent on
 * the operation's own path: a method the path does not serve (405: no path serves PUT), headers over
 * MAX_HEADER_BYTES (431), and headers that stop coming (408, on the server with a 1 s timeout).
 */
for (const [operation, byStatus] of Object.entries(TRIGGERS)) {
  const [method, template] = operation.split(' ') as [string, string]
  const path = `/v1${template.replace(/\{[^}]+\}/g, '1')}`
  byStatus[405] = { phase: 'healthy', send: (s) => s.request('PUT', path) }
  byStatus[431] = {
    phase: 'healthy',
    send: (s) => rawExchange(s, `${method} ${path} HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`),
  }
  byStatus[408] = { phase: 'slow', send: (s) => rawExchange(s, `${method} ${path} HTTP/1.1\r\nHost: x\r\n`) }
}
/** Statuses the HTTP server answers before any route: no route's hooks (deprecation headers) run. */
const BEFORE_ROUTING = new Set([408, 431])

for (const backend of BACKENDS) {
  describe(`every documented error response, sent for real (${backend.name})`, () => {
    const resources = useResources()
    let server: TestServer
    /** The unavailable phase's (see before()). */
    let unavailableServer: TestServer
    let limitedServer: TestServer
    let sunsetServer: TestServer
    let slowServer: TestServer
    let token: string
    let databaseUrl: string
    let proxy: TcpProxy | undefined
    let declared: { operation: string; status: number }[]
    /** The document as served, walked by path. */
    let doc: any

    before(async () => {
      const database = await resources.database(backend)
      databaseUrl = database.url
      token = await createKey(databaseUrl, 'errors')
      narrow.admin = await createKey(databaseUrl, 'only-admin', ['admin'])
      narrow.reader = await createKey(databaseUrl, 'only-reader', ['inventory:read'])
      await seed(databaseUrl, [
        { petId: 1, quantity: 5, status: 'available' },
        { petId: 2, quantity: 1, status: 'available' },
      ])
      // The unavailable phase's server. On PostgreSQL it reaches the database through a proxy of the
      // test's, which the phase cuts: every connection is refused or reset at once. On SQLite another
      // process holds the recovery lock, which each step waits for as long as its busy timeout allows:
      // DB_TIMEOUT_MS, 300 ms there (started first, so that no other server's write is in its way), so
      // that each 503 comes quickly.
      const unavailableEnv: Record<string, string> = { REQUIRE_IF_MATCH: 'true' }
      let unavailableUrl = databaseUrl
      if (backend.name === 'postgres') {
        const direct = new URL(databaseUrl)
        proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) })
        const proxied = new URL(databaseUrl)
        proxied.port = String(proxy.port)
        unavailableUrl = proxied.toString()
      } else unavailableEnv.DB_TIMEOUT_MS = '300'
      unavailableServer = await resources.server(unavailableUrl, unavailableEnv)
      // Every other phase has servers with the default DB_TIMEOUT_MS (5 s). With 300 ms, requests on a
      // healthy PostgreSQL were refused on a loaded machine (2 cores, load average 10-18): among the
      // hundred subscriptions made for the 409, a creation's transaction sat idle 230 ms while the
      // server's process waited to be scheduled, and commits waited up to 300 ms for their WAL flush
      // (pg_stat_activity, sampled every few ms); the server itself failed to start now and then, its
      // first connection not made within 300 ms.
      server = await resources.server(databaseUrl, { REQUIRE_IF_MATCH: 'true' })
      const open = await server.request('POST', '/v1/locations', { token, body: { name: OPEN_NAME } })
      assert.equal(open.status, 201, open.text)
      places.open = open.body.id
      const closed = await server.request('POST', '/v1/locations', { token, body: { name: 'Closed Yard' } })
      assert.equal(closed.status, 201, closed.text)
      places.closed = closed.body.id
      const deactivated = await server.request('PATCH', `/v1/locations/${places.closed}`, { token, body: { active: false } })
      assert.equal(deactivated.status, 200, deactivated.text)
      limitedServer = await resources.server(databaseUrl, { RATE_LIMIT_PER_KEY: '1', RATE_LIMIT_WINDOW_S: '86400' })
      sunsetServer = await resources.server(databaseUrl, {
        PET_LOOKUP_DEPRECATED_AT: '2020-01-01T00:00:00Z',
        PET_LOOKUP_SUNSET_AT: '2021-01-01T00:00:00Z',
      })
      slowServer = await resources.server(databaseUrl, { HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '1000' })
      doc = (await server.request('GET', '/v1/openapi.json')).body
      declared = Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>).flatMap(
        ([path, operations]) =>
          Object.entries(operations).flatMap(([method, operation]) =>
            Object.keys(operation.responses)
              .map(Number)
              .filter((status) => status >= 400)
              .map((status) => ({ operation: `${method.toUpperCase()} ${path}`, status })),
          ),
      )
    })
    after(() => proxy?.close())

    test('When the document is read, then every declared error response has a trigger here, and every trigger is declared', () => {
      const triggers = Object.entries(TRIGGERS).flatMap(([operation, byStatus]) =>
        Object.keys(byStatus).map((status) => `${operation} ${status}`),
      )
      assert.deepEqual(declared.map((d) => `${d.operation} ${d.status}`).sort(), triggers.sort())
    })

    const check = (operation: string, status: number, res: Response) => {
      const trigger = TRIGGERS[operation]![status]!
      const where = `${operation} → ${status}`
      if (operation === 'GET /pets/{petId}' && !BEFORE_ROUTING.has(status)) {
        assert.match(res.headers.get('deprecation') ?? '', /^@\d+$/, where)
        assert.match(res.headers.get('sunset') ?? '', /^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/, where)
        assert.match(res.headers.get('link') ?? '', /rel="deprecation", .*rel="sunset"$/, where)
      }
      assert.equal(res.status, status, `${where}: ${res.text}`)
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/, where)
      assert.deepEqual(Object.keys(res.body).sort(), ['code', 'message', 'status'], where)
      assert.equal(res.body.status, status, where)
      assert.equal(res.body.code, trigger.code ?? codeForStatus(status), where)
      assert.equal(ERROR_CODES[res.body.code as keyof typeof ERROR_CODES], status, where)
      assert.ok(typeof res.body.message === 'string' && res.body.message.length > 0, where)
      if (status === 403) {
        const needed = doc.paths[operation.split(' ')[1]!][operation.split(' ')[0]!.toLowerCase()].security[0].bearerAuth[0]
        assert.equal(res.headers.get('www-authenticate'), `Bearer error="insufficient_scope", scope="${needed}"`, where)
      }
      // The headers the document declares on every error response, or on these.
      assert.match(res.headers.get('x-request-id') ?? '', /^[\w.:@/+=-]{1,128}$/, where)
      if (status === 401) assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer realm="petstore"/, where)
      if (status === 405) assert.match(res.headers.get('allow') ?? '', /^(GET|POST)\b/, where)
    }

    const walk = async (phase: Phase) => {
      const sent = declared.filter((d) => TRIGGERS[d.operation]![d.status]!.phase === phase)
      assert.ok(sent.length > 0)
      const others: Partial<Record<Phase, TestServer>> = {
        limited: limitedServer,
        sunset: sunsetServer,
        slow: slowServer,
        unavailable: unavailableServer,
      }
      const target = others[phase] ?? server
      if (phase === 'slow') {
        // Each waits for the timeout: all at once.
        const answers = await Promise.all(sent.map(({ operation, status }) => TRIGGERS[operation]![status]!.send(target, token)))
        for (const [i, { operation, status }] of sent.entries()) check(operation, status, answers[i]!)
        return
      }
      for (const { operation, status } of sent) check(operation, status, await TRIGGERS[operation]![status]!.send(target, token))
    }

    test('When each declared response is provoked with a healthy database, then it has its status, the Error shape and its code', () =>
      walk('healthy'))

    test('When each declared 429 is provoked past a rate limit, then it has its status, the Error shape and its code', () =>
      walk('limited'))

    test('When each declared 410 is provoked past a sunset, then it has its status, the Error shape and its code', () => walk('sunset'))

    test('When each declared 408 is provoked by headers that stop coming, then it has its status, the Error shape and its code', () =>
      walk('slow'))

    test('When each declared 410 is provoked past rows removed by retention, then it has its status, the Error shape and its code', async () => {
      // Every row but the newest removed, as LEDGER_RETENTION would: a cursor at 0 is before them.
      const other = await openStorage({ databaseUrl, dbPoolSize: 2, dbTimeoutMs: 20_000, dbMigrationTimeoutMs: 60_000 })
      try {
        assert.ok((await other.pruneLedger(new Date(Date.now() + 60_000).toISOString(), 100_000)) > 0)
      } finally {
        await other.close()
      }
      await walk('pruned')
    })

    test('When each declared response is provoked with the database unavailable, then the same holds, and the service recovers', async () => {
      if (proxy) {
        await proxy.cut()
        try {
          await walk('unavailable')
        } finally {
          await proxy.restore()
        }
      } else {
        const lock = await holdSqliteRecoveryLock(databaseUrl.slice('sqlite:'.length))
        try {
          await walk('unavailable')
        } finally {
          await lock.release()
        }
      }
      // Nothing was applied while it was unavailable.
      const deadline = Date.now() + 10_000
      let list: Response
      do list = await unavailableServer.request('GET', '/v1/inventory', { token })
      while (list.status !== 200 && Date.now() < deadline)
      assert.deepEqual(list.body, [
        { petId: 1n, quantity: 5, status: 'available' },
        { petId: 2n, quantity: 1, status: 'available' },
      ])
    })

    test('When each declared response is provoked with the database broken, then the same holds and nothing internal shows', async () => {
      if (backend.name === 'sqlite') {
        const db = new Database(databaseUrl.slice('sqlite:'.length))
        db.exec(
          'DROP TABLE api_key_locations; DROP TABLE stock_levels; DROP TABLE order_allocations; DROP TABLE reservation_allocations; ' +
            'DROP TABLE locations; DROP TABLE reservation_lines; DROP TABLE reservations; DROP TABLE inventory; DROP TABLE orders; ' +
            'DROP TABLE inventory_changes; DROP TABLE deprecated_calls; DROP TABLE api_keys; DROP TABLE webhooks',
        )
        db.close()
      } else {
        const client = new pg.Client({ connectionString: databaseUrl })
        await client.connect()
        await client.query(
          'DROP TABLE api_key_locations, stock_levels, order_allocations, reservation_allocations, locations, reservation_lines, ' +
            'reservations, inventory, orders, inventory_changes, deprecated_calls, api_keys, webhooks CASCADE',
        )
        // DROP fires no trigger: move the version as a write would, so the cached list is not served.
        await client.query('UPDATE inventory_version SET version = version + 1')
        await client.end()
      }
      await walk('broken')
    })
  })
}
