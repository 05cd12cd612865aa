import type { ChangeReason, InventoryChange, Page } from 'petstore-client'
import { useState } from 'preact/hooks'
import { ChangesTable, NEWEST } from '../changes-table.js'
import { useLiveChanges } from '../live.js'
import { useLocations } from '../locations.js'
import { Pager, Problem, useRead } from '../parts.js'
import { api, type Session } from '../session.js'

const PAGE_SIZE = 50
/** Every reason a row may have, as the filter offers them. */
const REASONS: [ChangeReason, string][] = [
  ['arrival', 'Arrival'],
  ['return', 'Return'],
  ['count', 'Count'],
  ['damage', 'Damage'],
  ['loss', 'Loss'],
  ['adjustment', 'Adjustment'],
  ['order', 'Order'],
  ['cancellation', 'Cancellation'],
  ['import', 'Import'],
]

/** The store-wide ledger, newest first, a page at a time; optionally one pet's rows, or one reason's. */
export function ChangesPage({ session }: { session: Session }) {
  const [filter, setFilter] = useState<{ petId?: bigint; reason?: ChangeReason }>({})
  const [petInput, setPetInput] = useState('')
  const [reasonInput, setReasonInput] = useState<ChangeReason | ''>('')
  const [inputProblem, setInputProblem] = useState<string | undefined>()
  const [trail, setTrail] = useState<bigint[]>([NEWEST])
  const listing = useRead<Page<InventoryChange>>(
    (signal) =>
      session.can('inventory:read')
        ? api.changes.page({ before: trail.at(-1), ...filter, pageSize: PAGE_SIZE, signal })
        : Promise.reject(new Error('Reading the ledger needs a key with the inventory:read scope.')),
    [filter, trail],
  )
  const problem = inputProblem ?? listing.problem
  const locations = useLocations(session)
  // Transfers happen only between locations: offered once there are several.
  const reasons: [ChangeReason, string][] = locations.several ? [...REASONS, ['transfer', 'Transfer']] : REASONS

  // On the first page, new rows arrive on top as they are committed.
  useLiveChanges((change) => {
    if (trail.length !== 1) return
    if ((filter.petId !== undefined && change.petId !== filter.petId) || (filter.reason !== undefined && change.reason !== filter.reason))
      return
    listing.update((page) =>
      page.items.some((c) => c.seq === change.seq) ? page : { ...page, items: [change, ...page.items].slice(0, PAGE_SIZE) },
    )
  })

  const apply = (event: Event) => {
    event.preventDefault()
    const text = petInput.trim()
    if (text !== '' && !/^-?\d{1,19}$/.test(text)) return setInputProblem('A pet ID is a whole number.')
    setInputProblem(undefined)
    setFilter({ ...(text === '' ? {} : { petId: BigInt(text) }), ...(reasonInput === '' ? {} : { reason: reasonInput }) })
    setTrail([NEWEST])
  }

  return (
    <section aria-labelledby="changes-heading">
      <h2 id="changes-heading">Changes</h2>
      <form class="controls" onSubmit={apply}>
        <span class="field">
          <label for="changes-pet">Pet ID</label>
          <input id="changes-pet" inputMode="numeric" value={petInput} onInput={(e) => setPetInput(e.currentTarget.value)} />
        </span>
        <span class="field">
          <label for="changes-reason">Reason</label>
          <select id="changes-reason" value={reasonInput} onChange={(e) => setReasonInput(e.currentTarget.value as ChangeReason | '')}>
            <option value="">All</option>
            {reasons.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </span>
        <button type="submit">Filter</button>
      </form>
      <Problem text={problem} onRetry={inputProblem === undefined ? listing.retry : undefined} />
      <ChangesTable
        changes={listing.value?.items ?? []}
        withPet
        busy={listing.busy}
        locationName={locations.several ? locations.name : undefined}
      />
      <Pager
        page={trail.length}
        hasNext={listing.value?.next !== undefined}
        onPrevious={() => setTrail(trail.slice(0, -1))}
        onNext={() => {
          const next = listing.value?.next
          if (next !== undefined) setTrail([...trail, next])
        }}
      />
    </section>
  )
}
