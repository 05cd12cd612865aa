// The job both ceilings (bare-server.ts, fastify-server.ts) do from memory, read once from their env:
// PORT, HOST, BARE_TOKEN (API token), BARE_INVENTORY (JSON array file), BARE_BODY (optional file
// holding the exact GET /v1/inventory response bytes; else JSON.stringify of the sorted items).
import { readFileSync } from 'node:fs'

export interface Item { petId: number, quantity: number, status: string }

function required(name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`${process.argv[1] ?? 'ceiling'}: env ${name} is required`)
  return value
}

export const port = Number(required('PORT'))
export const host = process.env['HOST'] ?? '127.0.0.1'
export const expectedAuth = `Bearer ${required('BARE_TOKEN')}`
const items = (JSON.parse(readFileSync(required('BARE_INVENTORY'), 'utf8')) as Item[])
  .map(({ petId, quantity, status }) => ({ petId, quantity, status }))
  .sort((a, b) => a.petId - b.petId)
const bodyFile = process.env['BARE_BODY']
/** What GET /v1/inventory answers. */
export const listBody: Buffer = bodyFile ? readFileSync(bodyFile) : Buffer.from(JSON.stringify(items))
/** What PATCH /v1/inventory/{petId} updates. */
export const byId = new Map<number, Item>(items.map((item) => [item.petId, item]))

export const JSON_TYPE = 'application/json; charset=utf-8'
export const MAX_QUANTITY = 2_147_483_647
