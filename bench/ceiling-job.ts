// The job both ceilings (bare-server.ts, fastify-server.ts) do from memory, read once from their env
// (placeOrder, the order job, is shared too: both servers call it with the parsed body's fields):
// PORT, HOST, BARE_TOKEN (API token), BARE_INVENTORY (JSON array file), BARE_BODY (optional file
// holding the exact GET /v1/inventory response bytes; else JSON.stringify of the sorted items).
import { readFileSync } from 'node:fs'

export interface Item {
  petId: number
  quantity: number
  status: string
}

function required(name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`${process.argv[1] ?? 'ceiling'}: env ${name} is required`)
  return value
}

export const port = Number(required('PORT'))
export const host = process.env.HOST ?? '127.0.0.1'
export const expectedAuth = `Bearer ${required('BARE_TOKEN')}`
const items = (JSON.parse(readFileSync(required('BARE_INVENTORY'), 'utf8')) as Item[])
  .map(({ petId, quantity, status }) => ({ petId, quantity, status }))
  .sort((a, b) => a.petId - b.petId)
const bodyFile = process.env.BARE_BODY
/** What GET /v1/inventory answers. */
export const listBody: Buffer = bodyFile ? readFileSync(bodyFile) : Buffer.from(JSON.stringify(items))
/** What PATCH /v1/inventory/{petId} updates and POST /v1/store/orders takes stock from. */
export const byId = new Map<number, Item>(items.map((item) => [item.petId, item]))

export const JSON_TYPE = 'application/json; charset=utf-8'
export const MAX_QUANTITY = 2_147_483_647

export const ORDERS_PATH = '/v1/store/orders'

/** The service's Order JSON: id, petId, quantity, status, placedAt, updatedAt (in that order). */
export interface Order {
  id: number
  petId: number
  quantity: number
  status: 'placed'
  placedAt: string
  updatedAt: string
}
export interface ErrorBody {
  code: string
  message: string
  status: number
}
export type OrderOutcome = { status: 201; order: Order; location: string } | { status: 400 | 404 | 409; error: ErrorBody }

let lastOrderId = 0

const refuse = (status: 400 | 404 | 409, code: string, message: string): OrderOutcome => ({ status, error: { code, message, status } })

/**
 * POST /v1/store/orders from memory: petId an integer with an entry, quantity an integer 1..MAX_QUANTITY
 * and no more than the entry holds; takes it from the entry's stock, numbers the order, answers 201.
 */
export function placeOrder(petId: unknown, quantity: unknown): OrderOutcome {
  if (typeof petId !== 'number' || !Number.isSafeInteger(petId)) return refuse(400, 'invalid_request', 'body.petId must be an integer')
  if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 1 || quantity > MAX_QUANTITY) {
    return refuse(400, 'invalid_request', `body.quantity must be an integer from 1 to ${MAX_QUANTITY}`)
  }
  const item = byId.get(petId)
  if (item === undefined) return refuse(404, 'not_found', `No inventory entry for pet ${petId}`)
  if (item.quantity < quantity) {
    return refuse(409, 'insufficient_stock', `Pet ${petId} has ${item.quantity} in stock; the order asks for ${quantity}`)
  }
  item.quantity -= quantity
  const at = new Date().toISOString()
  const order: Order = { id: ++lastOrderId, petId, quantity, status: 'placed', placedAt: at, updatedAt: at }
  return { status: 201, order, location: `${ORDERS_PATH}/${order.id}` }
}
