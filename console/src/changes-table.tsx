import type { InventoryChange } from 'petstore-client'

/** `before` past every seq (the int64 maximum): the ledger read from its newest row. */
export const NEWEST = 9223372036854775807n

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })
const orDash = (value: string | number | bigint | null) => (value === null ? '—' : String(value))

/** Ledger rows as a `Changes` table, newest first as given: the store's (with a Pet column) or one pet's. */
export function ChangesTable({ changes, withPet, busy }: { changes: InventoryChange[]; withPet: boolean; busy: boolean }) {
  return (
    <div class="table-scroll">
      <table class="changes" aria-label="Changes" aria-busy={busy}>
        <thead>
          <tr>
            <th scope="col">When</th>
            {withPet && <th scope="col">Pet</th>}
            <th scope="col">Reason</th>
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
        <tbody>
          {changes.map((change) => (
            <tr key={String(change.seq)}>
              <td>
                <time dateTime={change.at}>{when.format(Date.parse(change.at))}</time>
              </td>
              {withPet && (
                <td class="id">
                  <a href={`#/pets/${change.petId}`}>{String(change.petId)}</a>
                </td>
              )}
              <td>{change.reason}</td>
              <td class="num">{orDash(change.previousQuantity)}</td>
              <td class="num">{change.quantity}</td>
              <td class="note">{orDash(change.note)}</td>
              <td class="id">{orDash(change.orderId)}</td>
              <td class="id">{orDash(change.keyId)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
