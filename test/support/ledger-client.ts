// Black-box clients for the ledger (GET /v1/inventory/changes) and the store orders, shared by the
// suites of issue 10: typed reads that check the contract's shapes and Link headers on the way.
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Response, Served, TestServer } from './helpers.js'

export interface InventoryChange {
  seq: number
  petId: bigint
  previousQuantity: number | null
  quantity: number
  reason:
    | 'adjustment'
    | 'arrival'
    | 'return'
    | 'count'
    | 'damage'
    | 'loss'
    | 'import'
    | 'order'
    | 'cancellation'
    | 'reservation'
    | 'release'
    | 'expiry'
    | 'transfer'
  note: string | null
  orderId: number | null
  batchId: string | null
  keyId: number | null
  requestId: string | null
  at: string
  /** Only on a hold's rows. */
  reservationId?: number
  /** Only on rows of another location than the default one. */
  locationId?: number
  /** Only on a transfer's rows. */
  transferId?: string
}

export interface Order {
  id: number
  petId: bigint
  quantity: number
  status: 'placed' | 'approved' | 'delivered' | 'cancelled'
  placedAt: string
  updatedAt: string
  /** Only on an order taken (partly) elsewhere than the default location. */
  allocations?: { locationId: number; quantity: number }[]
}

export const CHANGE_FIELDS = [
  'at',
  'batchId',
  'keyId',
  'note',
  'orderId',
  'petId',
  'previousQuantity',
  'quantity',
  'reason',
  'requestId',
  'seq',
]
export const ORDER_FIELDS = ['id', 'petId', 'placedAt', 'quantity', 'status', 'updatedAt']
/** RFC 3339 UTC with milliseconds, as the contract writes every time. */
export const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** Asserts a time string has the contract's form and lies within [from, to] (ms since the epoch), give or take `slackMs`. */
export function assertTimeWithin(value: unknown, from: number, to: number, what: string, slackMs = 1000): void {
  assert.equal(typeof value, 'string', `${what}: ${String(value)}`)
  assert.match(value as string, TIME, what)
  const ms = Date.parse(value as string)
  assert.ok(
    ms >= from - slackMs && ms <= to + slackMs,
    `${what} ${value} is not near ${new Date(from).toISOString()}..${new Date(to).toISOString()}`,
  )
}

export function assertChangeShape(change: unknown): asserts change is InventoryChange {
  const c = change as Record<string, unknown>
  // A hold's rows (issue 47) carry its reservationId; no other row has the field.
  const ofHold = ['reservation', 'release', 'expiry'].includes(c.reason as string) || (c.reason === 'order' && 'reservationId' in c)
  // A row of another location than the default one (issue 50) carries its locationId, a transfer's its transferId.
  const elsewhere = 'locationId' in c
  const ofTransfer = c.reason === 'transfer'
  assert.deepEqual(
    Object.keys(c).sort(),
    [
      ...CHANGE_FIELDS,
      ...(ofHold ? ['reservationId'] : []),
      ...(elsewhere ? ['locationId'] : []),
      ...(ofTransfer ? ['transferId'] : []),
    ].sort(),
    JSON.stringify(change, (_, v) => (typeof v === 'bigint' ? String(v) : v)),
  )
  if (elsewhere) assert.ok(Number.isSafeInteger(c.locationId) && (c.locationId as number) > 1, `locationId ${String(c.locationId)}`)
  if (ofTransfer) assert.match(String(c.transferId), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'transferId')
  if (ofHold)
    assert.ok(Number.isSafeInteger(c.reservationId) && (c.reservationId as number) > 0, `reservationId ${String(c.reservationId)}`)
  assert.ok(Number.isSafeInteger(c.seq) && (c.seq as number) > 0, `seq ${String(c.seq)}`)
  assert.equal(typeof c.petId, 'bigint')
  assert.ok(c.previousQuantity === null || Number.isSafeInteger(c.previousQuantity), 'previousQuantity')
  assert.ok(Number.isSafeInteger(c.quantity) && (c.quantity as number) >= 0, 'quantity')
  assert.ok(
    [
      'adjustment',
      'arrival',
      'return',
      'count',
      'damage',
      'loss',
      'import',
      'order',
      'cancellation',
      'reservation',
      'release',
      'expiry',
      'transfer',
    ].includes(c.reason as string),
    `reason ${String(c.reason)}`,
  )
  assert.ok(c.note === null || typeof c.note === 'string', 'note')
  assert.ok(
    c.note === null || ['adjustment', 'arrival', 'return', 'count', 'damage', 'loss', 'transfer'].includes(c.reason as string),
    "only a client's change leaves a note",
  )
  assert.ok(c.orderId === null || Number.isSafeInteger(c.orderId), 'orderId')
  assert.ok(
    c.batchId === null || /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(String(c.batchId)),
    'batchId',
  )
  assert.ok(c.keyId === null || Number.isSafeInteger(c.keyId), 'keyId')
  assert.ok(c.requestId === null || typeof c.requestId === 'string', 'requestId')
  assert.match(String(c.at), TIME, 'at')
}

export function assertOrderShape(order: unknown): asserts order is Order {
  const o = order as Record<string, unknown>
  // An order taken (partly) elsewhere than the default location (issue 50) shows its allocations.
  assert.deepEqual(
    Object.keys(o).sort(),
    'allocations' in o ? [...ORDER_FIELDS, 'allocations'].sort() : ORDER_FIELDS,
    JSON.stringify(order, (_, v) => (typeof v === 'bigint' ? String(v) : v)),
  )
  assert.ok(Number.isSafeInteger(o.id) && (o.id as number) > 0, `id ${String(o.id)}`)
  assert.equal(typeof o.petId, 'bigint')
  assert.ok(Number.isSafeInteger(o.quantity) && (o.quantity as number) >= 1, 'quantity')
  assert.ok(['placed', 'approved', 'delivered', 'cancelled'].includes(o.status as string), `status ${String(o.status)}`)
  assert.match(String(o.placedAt), TIME, 'placedAt')
  assert.match(String(o.updatedAt), TIME, 'updatedAt')
}

/** Asserts an Error body: exactly {code, message, status} with the given code and status. */
export function assertError(res: Response, status: number, code: string, what = ''): void {
  assert.equal(res.status, status, `${what} ${res.text}`)
  assert.deepEqual(res.body, { code, message: res.body?.message, status }, `${what} ${res.text}`)
  assert.equal(typeof res.body.message, 'string')
}

/**
 * The next-page link of a paged response, checked against the contract's exact form
 * `</PATH?after=N&limit=M[&NAME=VALUE]>; rel="next"`, or undefined when there is none.
 */
export function nextLink(res: Response, path: string, filter?: string): { after: string; limit: string; filter?: string } | undefined {
  const link = res.headers.get('link')
  if (link === null) return undefined
  const escaped = path.replace(/[/?]/g, (c) => `\\${c}`)
  const pattern = new RegExp(`^<${escaped}\\?after=(\\d+)&limit=(\\d+)${filter ? `&${filter}=([^&>]+)` : ''}>; rel="next"$`)
  const m = pattern.exec(link)
  assert.ok(
    m,
    `Link header ${JSON.stringify(link)} is not of the form <${path}?after=N&limit=M${filter ? `&${filter}=X` : ''}>; rel="next"`,
  )
  return filter ? { after: m[1]!, limit: m[2]!, filter: m[3]! } : { after: m[1]!, limit: m[2]! }
}

export async function getChanges(server: Served, token: string, query = ''): Promise<Response> {
  return server.request('GET', `/v1/inventory/changes${query ? `?${query}` : ''}`, { token })
}

/**
 * Reads the whole ledger (or one pet's) by following the Link headers from `after`, checking every
 * page: 200, rows well formed and in increasing seq order, a Link exactly when more rows remain,
 * pointing after the page's last row with the same limit (and petId).
 */
export async function readAllChanges(
  server: Served | (() => Served),
  token: string,
  options: { petId?: bigint; limit?: number; after?: number } = {},
): Promise<InventoryChange[]> {
  const pick = typeof server === 'function' ? server : () => server
  const rows: InventoryChange[] = []
  const limit = options.limit ?? 1000
  const filter = options.petId === undefined ? '' : `&petId=${options.petId}`
  let query = `after=${options.after ?? 0}&limit=${limit}${filter}`
  for (let page = 0; ; page++) {
    assert.ok(page < 100_000, 'the Links never end')
    const res = await getChanges(pick(), token, query)
    assert.equal(res.status, 200, `${query}: ${res.text}`)
    assert.ok(Array.isArray(res.body), res.text)
    assert.ok(res.body.length <= limit, `a page of ${res.body.length} rows with limit ${limit}`)
    for (const row of res.body) {
      assertChangeShape(row)
      if (options.petId !== undefined) assert.equal(row.petId, options.petId)
      const last = rows.at(-1)
      if (last) assert.ok(row.seq > last.seq, `seq ${row.seq} after ${last.seq}`)
      rows.push(row)
    }
    const next = nextLink(res, '/v1/inventory/changes', options.petId === undefined ? undefined : 'petId')
    if (!next) break
    assert.equal(res.body.length, limit, 'a Link on a page shorter than the limit')
    assert.equal(Number(next.after), rows.at(-1)!.seq, 'the Link points after the last row of the page')
    assert.equal(Number(next.limit), limit)
    if (options.petId !== undefined) assert.equal(next.filter, String(options.petId))
    query = `after=${next.after}&limit=${next.limit}${filter}`
  }
  return rows
}

/** The seq of the newest ledger row (0 when there is none). */
export async function lastSeq(server: Served, token: string): Promise<number> {
  return (await readAllChanges(server, token)).at(-1)?.seq ?? 0
}

/** The rows written after `after`, all of them. */
export function changesSince(server: Served, token: string, after: number, petId?: bigint): Promise<InventoryChange[]> {
  return readAllChanges(server, token, petId === undefined ? { after } : { after, petId })
}

/** The id `petstore keys list` shows for the active key with this name. */
export async function keyIdOf(server: Served, name: string): Promise<number> {
  const result = await server.cli(['keys', 'list'])
  assert.equal(result.code, 0, result.stderr)
  const [header, ...rows] = result.stdout
    .trim()
    .split('\n')
    .map((l) => l.split('\t'))
  const revoked = header!.indexOf('REVOKED')
  const id = rows.find((r) => r[1] === name && r[revoked] === '-')?.[0]
  assert.ok(id, `keys list shows no active key '${name}':\n${result.stdout}`)
  return Number(id)
}

/** Writes a JSON inventory file and imports it with the real CLI (`petstore import inventory`). */
export async function importInventory(
  server: Served,
  items: { petId: bigint | number; quantity: number; status?: string }[],
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-ledger-'))
  const file = join(dir, 'inventory.json')
  writeFileSync(
    file,
    `[${items.map((i) => `{"petId":${i.petId},"quantity":${i.quantity},"status":${JSON.stringify(i.status ?? 'available')}}`).join(',')}]`,
  )
  const result = await server.cli(['import', 'inventory', file])
  assert.equal(result.code, 0, result.stderr)
}

export async function quantityOf(server: Served, token: string, petId: bigint | number): Promise<number | undefined> {
  const res = await server.request('GET', `/v1/inventory/${petId}`, { token })
  if (res.status === 404) return undefined
  assert.equal(res.status, 200, res.text)
  return res.body.quantity
}

export function placeOrder(server: Served, token: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return server.request('POST', '/v1/store/orders', { token, body, headers })
}

export function setOrderStatus(
  server: Served,
  token: string,
  id: number | string,
  status: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  return server.request('PATCH', `/v1/store/orders/${id}`, { token, body: { status }, headers })
}

/** Reads every order (optionally of one status) by following Links, checking each page as readAllChanges does. */
export async function readAllOrders(
  server: Served,
  token: string,
  options: { status?: string; limit?: number; after?: number } = {},
): Promise<Order[]> {
  const orders: Order[] = []
  const limit = options.limit ?? 1000
  const filter = options.status === undefined ? '' : `&status=${options.status}`
  let query = `after=${options.after ?? 0}&limit=${limit}${filter}`
  for (let page = 0; ; page++) {
    assert.ok(page < 100_000, 'the Links never end')
    const res = await server.request('GET', `/v1/store/orders?${query}`, { token })
    assert.equal(res.status, 200, `${query}: ${res.text}`)
    assert.ok(Array.isArray(res.body), res.text)
    assert.ok(res.body.length <= limit)
    for (const order of res.body) {
      assertOrderShape(order)
      if (options.status !== undefined) assert.equal(order.status, options.status)
      const last = orders.at(-1)
      if (last) assert.ok(order.id > last.id, `order ${order.id} after ${last.id}`)
      orders.push(order)
    }
    const next = nextLink(res, '/v1/store/orders', options.status === undefined ? undefined : 'status')
    if (!next) break
    assert.equal(res.body.length, limit, 'a Link on a page shorter than the limit')
    assert.equal(Number(next.after), orders.at(-1)!.id)
    assert.equal(Number(next.limit), limit)
    if (options.status !== undefined) assert.equal(next.filter, options.status)
    query = `after=${next.after}&limit=${next.limit}${filter}`
  }
  return orders
}

/** A small seeded PRNG (mulberry32), so a load's sequence of operations is the same on every run. */
export function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Resolves once the wall clock has moved past `iso` (so a time written next is later than it); a bounded spin, not a sleep. */
export async function clockPast(iso: string): Promise<void> {
  const target = Date.parse(iso)
  const deadline = Date.now() + 2000
  while (Date.now() <= target) {
    assert.ok(Date.now() < deadline, `the clock did not pass ${iso}`)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/**
 * Replays ledger rows in seq order, per pet: every row's previousQuantity (when not null) must equal
 * the running value, and the running value becomes the row's quantity. Returns the final value per pet.
 */
export function replay(rows: InventoryChange[]): Map<bigint, number> {
  const running = new Map<bigint, number>()
  for (const row of rows) {
    const current = running.get(row.petId)
    if (row.previousQuantity === null) {
      assert.equal(row.reason, 'import', `seq ${row.seq}: only an import creates an entry`)
      assert.equal(current, undefined, `seq ${row.seq}: previousQuantity null for pet ${row.petId}, which had an entry`)
    } else if (current !== undefined) {
      assert.equal(
        row.previousQuantity,
        current,
        `seq ${row.seq} (${row.reason}, pet ${row.petId}): previousQuantity ${row.previousQuantity}, running value ${current}`,
      )
    }
    running.set(row.petId, row.quantity)
  }
  return running
}

/**
 * Sends one request as raw bytes (latin1) and resolves with its status and body text: for header
 * values fetch() refuses to send, such as control characters.
 */
export function rawRequest(server: TestServer, head: string[], body = ''): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(server.baseUrl)
  const bytes = Buffer.concat([
    Buffer.from(
      [...head, `Host: ${hostname}:${port}`, `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close', '', ''].join('\r\n'),
      'latin1',
    ),
    Buffer.from(body),
  ])
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname)
    const chunks: Buffer[] = []
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')))
    socket.on('data', (d) => chunks.push(d))
    socket.on('error', reject)
    socket.on('close', () => {
      const out = Buffer.concat(chunks).toString('latin1')
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(out)
      if (!status) return reject(new Error(`not an HTTP response: ${JSON.stringify(out.slice(0, 200))}`))
      resolve({ status: Number(status[1]), text: out.slice(out.indexOf('\r\n\r\n') + 4) })
    })
    // Not end(): the server may drop a connection the client half-closed before its answer.
    socket.write(bytes)
  })
}
