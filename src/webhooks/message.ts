import type { InventoryChange } from '../domain.js'
import { changeJson } from '../inventory/inventory.json.js'

/** The event type of every message: a ledger row. */
export const CHANGE_EVENT_TYPE = 'inventory.changed'

/**
 * One ledger row's message to one subscription: its id (the same on every retry, distinct per row
 * and per subscription) and its body, the Standard Webhooks envelope around the row as the feed
 * writes it, `timestamp` being the change's own time.
 */
export function webhookMessage(messageTag: string, row: InventoryChange): { id: string; body: string } {
  return {
    id: `msg_${messageTag}_${row.seq}`,
    body: `{"type":"${CHANGE_EVENT_TYPE}","timestamp":"${row.at}","data":${changeJson(row)}}`,
  }
}
