// Test data, starting the service / the ceilings (bare node:http, minimal Fastify) for one run, and checking they answer correctly before load.
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import type { Backend } from './backends.js'
import { CLI_TIMEOUT_MS, FIRST_PET_ID } from './config.js'
import { freePort, HOST, runNode, startServer, type ServerHandle } from './procs.js'

export interface Item {
  petId: number
  quantity: number
  status: 'available' | 'pending' | 'sold'
}

export interface Dataset {
  items: Item[]
  /** JSON file in the `import inventory` format. */
  file: string
  /** The same entries as a CSV file (header petId,quantity,status), when asked for. */
  csvFile?: string
  /** JSON.stringify of the items sorted by petId: what GET /v1/inventory should return. */
  expectedBody: Buffer
}

export interface Running {
  server: ServerHandle
  token: string
  /** Stops the server, then frees whatever the run created (database). */
  stop(): Promise<void>
}

const READY_PATH = '/v1/openapi.json'
const STATUSES = ['available', 'pending', 'sold'] as const
const CEILING_SCRIPTS = {
  bare: fileURLToPath(new URL('./bare-server.js', import.meta.url)),
  fastify: fileURLToPath(new URL('./fastify-server.js', import.meta.url)),
} as const
export type Ceiling = keyof typeof CEILING_SCRIPTS

/**
 * Deterministic inventory: pets FIRST_PET_ID.., pseudo-random quantities and statuses; with `stock`,
 * every pet holds that quantity instead (the order scenario, whose orders must never be refused).
 */
export async function makeDataset(dir: string, size: number, withCsv = false, stock?: number): Promise<Dataset> {
  let seed = 0x2545f491 ^ size
  const next = (): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return seed
  }
  const items: Item[] = []
  for (let i = 0; i < size; i++) {
    const quantity = next() % 100_000
    items.push({ petId: FIRST_PET_ID + i, quantity: stock ?? quantity, status: STATUSES[next() % 3] ?? 'available' })
  }
  const base = join(dir, `inventory-${size}${stock === undefined ? '' : `-stock-${stock}`}`)
  const file = `${base}.json`
  const json = JSON.stringify(items)
  await writeFile(file, json)
  const dataset: Dataset = { items, file, expectedBody: Buffer.from(json) }
  if (withCsv) {
    dataset.csvFile = `${base}.csv`
    await writeFile(dataset.csvFile, `petId,quantity,status\n${items.map((i) => `${i.petId},${i.quantity},${i.status}\n`).join('')}`)
  }
  return dataset
}

/** The service's environment for one database: one process (no cluster), warnings only in its log. */
export function serviceEnv(url: string): NodeJS.ProcessEnv {
  // No rate limits: wrk sends tens of thousands of requests a second with one key.
  return { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn', WORKERS: '1', RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_ADDRESS: '0' }
}

/** `keys create`; returns the token it printed. */
export async function createKey(cli: string, env: NodeJS.ProcessEnv): Promise<string> {
  const token = (await runNode(cli, ['keys', 'create', '--name', 'bench'], env, CLI_TIMEOUT_MS)).trim()
  if (token === '' || /\s/.test(token)) throw new Error(`keys create printed ${JSON.stringify(token)}, expected a token alone`)
  return token
}

/** `cli.js serve` on a free port of 127.0.0.1, once it answers. */
export async function serve(cli: string, backend: Backend, env: NodeJS.ProcessEnv): Promise<ServerHandle> {
  const port = await freePort()
  return startServer(`service/${backend.name}`, cli, ['serve'], { ...env, PORT: String(port), HOST }, port, READY_PATH)
}

/** Fresh database, API key, inventory import, then `cli.js serve` until ready, with `envOf`'s environment. */
export async function startService(
  cli: string,
  backend: Backend,
  dataset: Dataset,
  label: string,
  envOf: (url: string) => NodeJS.ProcessEnv = serviceEnv,
): Promise<Running> {
  const db = await backend.createDatabase(label)
  try {
    const env = envOf(db.url)
    const token = await createKey(cli, env)
    await runNode(cli, ['import', 'inventory', dataset.file], env, CLI_TIMEOUT_MS)
    const server = await serve(cli, backend, env)
    return {
      server,
      token,
      stop: async () => {
        try {
          await server.stop()
        } finally {
          await db.dispose()
        }
      },
    }
  } catch (err) {
    await db.dispose()
    throw err
  }
}

/** bench/bare-server.js or bench/fastify-server.js serving `dataset`, answering GET with `body` bytes (default: dataset.expectedBody). */
export async function startCeiling(kind: Ceiling, dataset: Dataset, dir: string, body: Buffer | undefined): Promise<Running> {
  const token = randomBytes(24).toString('base64url')
  const env: NodeJS.ProcessEnv = { ...process.env, HOST, BARE_TOKEN: token, BARE_INVENTORY: dataset.file }
  if (body !== undefined) {
    env.BARE_BODY = join(dir, `body-${dataset.items.length}.json`)
    await writeFile(env.BARE_BODY, body)
  }
  const port = await freePort()
  const server = await startServer(kind, CEILING_SCRIPTS[kind], [], { ...env, PORT: String(port) }, port, READY_PATH)
  return { server, token, stop: () => server.stop() }
}

function pick(value: unknown): unknown {
  if (!Array.isArray(value)) return value
  return value.map((v: Partial<Item>) => ({ petId: v.petId, quantity: v.quantity, status: v.status }))
}

/** True when a parsed list body holds exactly `items`, in order (a loop: fast enough for 1,000,000). */
export function sameItems(value: unknown, items: readonly Item[]): boolean {
  if (!Array.isArray(value) || value.length !== items.length) return false
  for (let i = 0; i < items.length; i++) {
    const v = value[i] as Partial<Item> | undefined
    const e = items[i]
    if (v?.petId !== e?.petId || v?.quantity !== e?.quantity || v?.status !== e?.status) return false
  }
  return true
}

/** GET /v1/inventory once; throws unless it is 200 with exactly the dataset. Returns the body bytes. */
export async function checkGet(running: Running, dataset: Dataset): Promise<Buffer> {
  const res = await fetch(`${running.server.baseUrl}/v1/inventory`, {
    headers: { authorization: `Bearer ${running.token}` },
    signal: AbortSignal.timeout(10_000),
  })
  const body = Buffer.from(await res.arrayBuffer())
  if (res.status !== 200) throw new Error(`${running.server.label}: GET /v1/inventory -> ${res.status}: ${body.toString().slice(0, 300)}`)
  if (!sameItems(JSON.parse(body.toString('utf8')), dataset.items)) {
    throw new Error(`${running.server.label}: GET /v1/inventory did not return the imported inventory`)
  }
  return body
}

/** One PATCH of the first pet; throws unless it is 200 with the updated item. */
export async function checkPatch(running: Running, dataset: Dataset): Promise<void> {
  const pet = dataset.items[0]
  if (pet === undefined) throw new Error('empty dataset')
  const res = await fetch(`${running.server.baseUrl}/v1/inventory/${pet.petId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${running.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ quantity: 7 }),
    signal: AbortSignal.timeout(10_000),
  })
  const text = await res.text()
  const expected = { petId: pet.petId, quantity: 7, status: pet.status }
  if (res.status !== 200 || !isDeepStrictEqual(pick([JSON.parse(text)]), [expected])) {
    throw new Error(
      `${running.server.label}: PATCH /v1/inventory/${pet.petId} -> ${res.status} ${text.slice(0, 300)}, expected 200 ${JSON.stringify(expected)}`,
    )
  }
}

/** Keys and value types of the Order JSON the service answers with (and the ceilings copy). */
const ORDER_KEYS = ['id', 'petId', 'quantity', 'status', 'placedAt', 'updatedAt']
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$/

async function postOrder(running: Running, body: object): Promise<{ status: number; text: string; location: string | null }> {
  const res = await fetch(`${running.server.baseUrl}/v1/store/orders`, {
    method: 'POST',
    headers: { authorization: `Bearer ${running.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  })
  return { status: res.status, text: await res.text(), location: res.headers.get('location') }
}

async function getJson(running: Running, path: string): Promise<unknown> {
  const res = await fetch(`${running.server.baseUrl}${path}`, {
    headers: { authorization: `Bearer ${running.token}` },
    signal: AbortSignal.timeout(10_000),
  })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`${running.server.label}: GET ${path} -> ${res.status}: ${text.slice(0, 300)}`)
  return JSON.parse(text)
}

/**
 * One order for the first pet: 201 with the Order shape and its Location; then an order for one unit
 * more than is left and one for a pet without an entry must be refused (409, 404). For the service
 * (`durable`), the pet's stock must have dropped by exactly the quantity and the ledger must hold the
 * order's row (reason "order", that orderId).
 */
export async function checkOrder(running: Running, dataset: Dataset, durable: boolean): Promise<void> {
  const label = running.server.label
  const pet = dataset.items[0]
  if (pet === undefined) throw new Error('empty dataset')
  if (pet.quantity < 1) throw new Error(`pet ${pet.petId} has no stock to order`)
  const quantity = Math.min(3, pet.quantity)
  const placed = await postOrder(running, { petId: pet.petId, quantity })
  const fail = (why: string): Error =>
    new Error(
      `${label}: POST /v1/store/orders {"petId":${pet.petId},"quantity":${quantity}} -> ` +
        `${placed.status} ${placed.text.slice(0, 300)}: ${why}`,
    )
  if (placed.status !== 201) throw fail('expected 201')
  const order = JSON.parse(placed.text) as Record<string, unknown>
  if (!isDeepStrictEqual(Object.keys(order), ORDER_KEYS)) throw fail(`expected the keys ${ORDER_KEYS.join(', ')}`)
  const { id, placedAt, updatedAt } = order
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) throw fail('id is not a positive integer')
  if (order.petId !== pet.petId || order.quantity !== quantity || order.status !== 'placed') {
    throw fail(`expected petId ${pet.petId}, quantity ${quantity}, status "placed"`)
  }
  for (const at of [placedAt, updatedAt]) {
    if (typeof at !== 'string' || !ISO_UTC.test(at) || Number.isNaN(Date.parse(at))) throw fail(`${String(at)} is not an ISO UTC time`)
  }
  if (placed.location !== `/v1/store/orders/${id}`) throw fail(`Location is ${String(placed.location)}, expected /v1/store/orders/${id}`)

  const left = pet.quantity - quantity
  const tooMany = await postOrder(running, { petId: pet.petId, quantity: left + 1 })
  if (tooMany.status !== 409)
    throw new Error(
      `${label}: an order for ${left + 1} units (${left} left) -> ${tooMany.status} ${tooMany.text.slice(0, 300)}, expected 409`,
    )
  const absent = FIRST_PET_ID + dataset.items.length
  const unknown = await postOrder(running, { petId: absent, quantity: 1 })
  if (unknown.status !== 404)
    throw new Error(`${label}: an order for pet ${absent} (no entry) -> ${unknown.status} ${unknown.text.slice(0, 300)}, expected 404`)
  if (!durable) return

  const entry = (await getJson(running, `/v1/inventory/${pet.petId}`)) as Partial<Item>
  if (entry.quantity !== left)
    throw new Error(
      `${label}: after the order, pet ${pet.petId} holds ${String(entry.quantity)}, expected ${pet.quantity} - ${quantity} = ${left}`,
    )
  const changes = await getJson(running, `/v1/inventory/changes?petId=${pet.petId}`)
  const row = Array.isArray(changes)
    ? (changes as Array<Record<string, unknown>>).find((c) => c.reason === 'order' && c.orderId === id)
    : undefined
  if (row === undefined)
    throw new Error(
      `${label}: GET /v1/inventory/changes?petId=${pet.petId} has no row with reason "order" and orderId ${id}: ${JSON.stringify(changes).slice(0, 300)}`,
    )
  if (row.previousQuantity !== pet.quantity || row.quantity !== left) {
    throw new Error(
      `${label}: the ledger row of order ${id} says ${String(row.previousQuantity)} -> ${String(row.quantity)}, expected ${pet.quantity} -> ${left}`,
    )
  }
}
