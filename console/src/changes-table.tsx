import type { InventoryChange } from 'petstore-client'
import { useState } from 'preact/hooks'
import { rowLocation } from './locations.js'

/** `before` past every seq (the int64 maximum): the ledger read from its newest row. */
export const NEWEST = 9223372036854775807n

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })
const orDash = (value: string | number | bigint | null) => (value === null ? '—' : String(value))
/** How many of a batch's changes its line lists before "and N more". */
const LISTED = 8

/**
 * The rows as shown: consecutive rows of one batch (the same non-null batchId: a batch's rows are
 * contiguous in the ledger) as one group; any other row, or a batch's only row on the page, alone.
 */
export function groupChanges(changes: InventoryChange[]): InventoryChange[][] {
  const groups: InventoryChange[][] = []
  for (const change of changes) {
    const last = groups.at(-1)
    if (last && change.batchId !== null && last[0]!.batchId === change.batchId) last.push(change)
    else groups.push([change])
  }
  return groups
}

/** By how much a row moved the quantity: +12, −3 (a true minus), 0; a first row (no From) its quantity. */
const movement = (change: InventoryChange) => {
  if (change.previousQuantity === null) return `= ${change.quantity}`
  const delta = change.quantity - change.previousQuantity
  return delta > 0 ? `+${delta}` : delta < 0 ? `−${-delta}` : '±0'
}

/**
 * Ledger rows as a `Changes` table, newest first as given: the store's (with a Pet column) or one pet's.
 * With `locationName` (a store with several locations), a Location column says whose From and To they are.
 */
export function ChangesTable({
  changes,
  withPet,
  busy,
  locationName,
}: {
  changes: InventoryChange[]
  withPet: boolean
  busy: boolean
  locationName?: ((id: bigint) => string) | undefined
}) {
  // The batches opened to show their rows, by batchId.
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set())
  const toggle = (batchId: string) =>
    setOpen((shown) => {
      const next = new Set(shown)
      if (!next.delete(batchId)) next.add(batchId)
      return next
    })
  const row = (change: InventoryChange, inBatch = false) => (
    <tr key={String(change.seq)} class={inBatch ? 'in-batch' : undefined}>
      <td>
        <time dateTime={change.at}>{when.format(Date.parse(change.at))}</time>
      </td>
      {withPet && (
        <td class="id">
          <a href={`#/pets/${change.petId}`}>{String(change.petId)}</a>
        </td>
      )}
      <td>{change.reason}</td>
      {locationName && <td class="location">{locationName(rowLocation(change))}</td>}
      <td class="num">{orDash(change.previousQuantity)}</td>
      <td class="num">{change.quantity}</td>
      <td class="note">{orDash(change.note)}</td>
      <td class="id">{orDash(change.orderId)}</td>
      <td class="id">{orDash(change.keyId)}</td>
    </tr>
  )
  // A batch's changes in the order it applied them (its rows share one moment, so newest first says little).
  const batch = (newestFirst: InventoryChange[]) => {
    const rows = [...newestFirst].sort((a, b) => (a.seq < b.seq ? -1 : 1))
    const first = rows[0]!
    const batchId = first.batchId!
    const expanded = open.has(batchId)
    const reasons = [...new Set(rows.map((c) => c.reason))].join(', ')
    const keys = [...new Set(rows.map((c) => orDash(c.keyId)))].join(', ')
    const listed = rows.slice(0, LISTED)
    return [
      <tr key={`batch-${first.seq}`} class="batch" data-batch-id={batchId}>
        <td>
          <time dateTime={first.at}>{when.format(Date.parse(first.at))}</time>
        </td>
        <td colSpan={(withPet ? 6 : 5) + (locationName ? 1 : 0)}>
          <div class="batch-line">
            <button type="button" class="disclosure" aria-expanded={expanded} onClick={() => toggle(batchId)}>
              Batch of {rows.length} changes
            </button>
            <span class="batch-reasons">{reasons}</span>
            <ul class="batch-moves" aria-label={`The batch's changes${rows.length > LISTED ? `, the first ${LISTED}` : ''}`}>
              {listed.map((c) => (
                <li key={String(c.seq)}>
                  {withPet && (
                    <>
                      <a href={`#/pets/${c.petId}`}>{String(c.petId)}</a>{' '}
                    </>
                  )}
                  <span class="move">{movement(c)}</span>
                </li>
              ))}
              {rows.length > LISTED && <li class="hint">and {rows.length - LISTED} more</li>}
            </ul>
          </div>
        </td>
        <td class="id">{keys}</td>
      </tr>,
      ...(expanded ? rows.map((c) => row(c, true)) : []),
    ]
  }

  return (
    <div class="table-scroll">
      <table class="changes" aria-label="Changes" aria-busy={busy}>
        <thead>
          <tr>
            <th scope="col">When</th>
            {withPet && <th scope="col">Pet</th>}
            <th scope="col">Reason</th>
            {locationName && <th scope="col">Location</th>}
            <th scope="col" class="num">
              From
            </th>
            <th scope="col" class="num">
              To
            </th>
            <th scope="col">Note</th>
            <th scope="col">Order</th>
            <th scope="col">Key</th>
          </tr>
        </thead>
        <tbody>{groupChanges(changes).map((rows) => (rows.length > 1 ? batch(rows) : row(rows[0]!)))}</tbody>
      </table>
    </div>
  )
}
