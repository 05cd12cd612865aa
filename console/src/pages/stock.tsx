import { type InventoryChange, type InventoryItem, type Page, PetstoreError, type PetStatus, type StockLevel } from 'petstore-client'
import { useRef, useState } from 'preact/hooks'
import { EditDialog } from '../edit-dialog.js'
import { useLiveChanges } from '../live.js'
import { rowLocation, useLocations } from '../locations.js'
import { api, type Session } from '../session.js'
import { Pager, Problem, useRead } from '../parts.js'

const PAGE_SIZE = 50
const THRESHOLD_KEY = 'petstore.console.lowStock'

/** What the table shows: a page of the list (with the `after` of each page before it), or one entry asked for by id. */
type View = { kind: 'page'; status: PetStatus | ''; trail: (bigint | undefined)[] } | { kind: 'pet'; petId: bigint }

/** A missing entry, in the page's words. */
const noEntry = (error: unknown) => {
  throw error instanceof PetstoreError && error.code === 'not_found' ? new Error('No inventory entry for that pet.') : error
}

/** A location's stock of a pet as a row of the table (the location is the page's). */
const asRow = ({ petId, quantity, status }: StockLevel): InventoryItem => ({ petId, quantity, status })

/**
 * The inventory a page at a time. With several locations, a picker shows one location's stock instead
 * of the store's (All locations, the default); a store with one location shows no picker.
 */
export function StockPage({ session }: { session: Session }) {
  const [view, setView] = useState<View>({ kind: 'page', status: '', trail: [undefined] })
  const locations = useLocations(session)
  const [picked, setPicked] = useState<bigint | undefined>()
  // The location shown: only while the store has several (else all of it, as before).
  const at = locations.several ? picked : undefined
  const [inputProblem, setInputProblem] = useState<string | undefined>()
  const [petInput, setPetInput] = useState('')
  const [threshold, setThreshold] = useState(() => Number(localStorage.getItem(THRESHOLD_KEY) ?? '5'))
  const [editing, setEditing] = useState<InventoryItem | undefined>()
  const listing = useRead<Page<InventoryItem>>(
    (signal) => {
      if (view.kind === 'pet')
        return at === undefined
          ? api.inventory.get(view.petId, { signal }).then(({ item }) => ({ items: [item], next: undefined }), noEntry)
          : api.inventory.locations(view.petId, { signal }).then((levels) => {
              const level = levels.find((l) => l.locationId === at)
              if (level === undefined) throw new Error(`Pet ${view.petId} is not stocked at ${locations.name(at)}.`)
              return { items: [asRow(level)], next: undefined }
            }, noEntry)
      const query = { after: view.trail.at(-1), status: view.status || undefined, pageSize: PAGE_SIZE, signal }
      return at === undefined
        ? api.inventory.page(query)
        : api.locations.stockPage(at, query).then((page) => ({ items: page.items.map(asRow), next: page.next }))
    },
    [view, at],
  )
  const items = listing.value?.items ?? []
  const next = listing.value?.next
  const problem = inputProblem ?? listing.problem
  const show = (shown: View) => {
    setInputProblem(undefined)
    setView(shown)
  }
  const pick = (location: bigint | undefined) => {
    setInputProblem(undefined)
    setPicked(location)
    if (view.kind === 'page') setView({ ...view, trail: [undefined] })
  }

  const showQuantity = (petId: bigint, quantity: number) =>
    listing.update((page) =>
      page.items.some((i) => i.petId === petId)
        ? { ...page, items: page.items.map((i) => (i.petId === petId ? { ...i, quantity } : i)) }
        : page,
    )
  // The latest read of each pet's entry asked for by a change, so an earlier answer arriving late is not shown.
  const entryReads = useRef(new Map<bigint, number>())
  const readEntry = (change: InventoryChange) => {
    if (!items.some((i) => i.petId === change.petId)) return
    const asked = (entryReads.current.get(change.petId) ?? 0) + 1
    entryReads.current.set(change.petId, asked)
    api.inventory.get(change.petId).then(
      ({ item }) => entryReads.current.get(change.petId) === asked && showQuantity(change.petId, item.quantity),
      () => {}, // the rows keep what they showed; the next change or read puts it right
    )
  }
  // A change made anywhere shows in the rows on screen at once. A ledger row's quantities are its
  // location's: the store's (one location) or the location shown are updated from it, and with
  // several locations a pet's quantity in all is read again.
  useLiveChanges((change) => {
    if (at !== undefined) {
      if (rowLocation(change) === at) showQuantity(change.petId, change.quantity)
    } else if (locations.single && change.locationId === undefined) showQuantity(change.petId, change.quantity)
    else readEntry(change)
  })

  const showPet = (event: Event) => {
    event.preventDefault()
    const text = petInput.trim()
    if (!/^-?\d{1,19}$/.test(text)) return setInputProblem('A pet ID is a whole number.')
    show({ kind: 'pet', petId: BigInt(text) })
  }
  const setLowStock = (value: number) => {
    setThreshold(value)
    localStorage.setItem(THRESHOLD_KEY, String(value))
  }
  const canWrite = session.can('inventory:write')

  return (
    <section aria-labelledby="stock-heading">
      <h2 id="stock-heading">Stock</h2>
      <div class="controls">
        <form class="inline" onSubmit={showPet}>
          <label for="pet-id">Pet ID</label>
          <input id="pet-id" inputMode="numeric" value={petInput} onInput={(e) => setPetInput(e.currentTarget.value)} />
          <button type="submit">Show</button>
          {view.kind === 'pet' && (
            <button type="button" onClick={() => show({ kind: 'page', status: '', trail: [undefined] })}>
              Show all
            </button>
          )}
        </form>
        {locations.several && (
          <span class="pair">
            <label for="location-filter">Location</label>
            <select
              id="location-filter"
              value={at === undefined ? '' : String(at)}
              onChange={(e) => pick(e.currentTarget.value === '' ? undefined : BigInt(e.currentTarget.value))}
            >
              <option value="">All locations</option>
              {locations.active.map((location) => (
                <option key={String(location.id)} value={String(location.id)}>
                  {location.name}
                </option>
              ))}
            </select>
          </span>
        )}
        <span class="pair">
          <label for="status-filter">Status</label>
          <select
            id="status-filter"
            value={view.kind === 'page' ? view.status : ''}
            onChange={(e) => show({ kind: 'page', status: e.currentTarget.value as PetStatus | '', trail: [undefined] })}
          >
            <option value="">All</option>
            <option value="available">Available</option>
            <option value="pending">Pending</option>
            <option value="sold">Sold</option>
          </select>
        </span>
        <span class="pair">
          <label for="low-stock">Low-stock threshold</label>
          <input id="low-stock" type="number" min={0} value={threshold} onInput={(e) => setLowStock(Number(e.currentTarget.value) || 0)} />
        </span>
      </div>
      {at !== undefined && (
        <p class="hint at-location">
          The stock at <strong>{locations.name(at)}</strong> only: the pets stocked there, and how many each has there.
        </p>
      )}
      <Problem
        text={problem}
        onRetry={
          inputProblem === undefined && listing.retry
            ? () => {
                // The locations too, when they could not be read either (the service was away).
                if (locations.problem !== undefined) locations.reload()
                listing.retry?.()
              }
            : undefined
        }
      />
      <div class="table-scroll">
        <table aria-label="Stock" aria-busy={listing.busy}>
          <thead>
            <tr>
              <th scope="col">Pet</th>
              <th scope="col" class="num">
                Quantity
              </th>
              <th scope="col">Status</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => {
              const low = item.quantity < threshold
              return (
                <tr key={String(item.petId)} class={low ? 'low' : undefined}>
                  <td class="id">
                    <a href={`#/pets/${item.petId}`}>{String(item.petId)}</a>
                  </td>
                  <td class="num">
                    {item.quantity}
                    {low && <span class="badge">Low stock</span>}
                  </td>
                  <td>{item.status}</td>
                  <td>
                    <button
                      type="button"
                      aria-disabled={!canWrite}
                      aria-describedby={canWrite ? undefined : 'no-write'}
                      onClick={() => canWrite && setEditing(item)}
                    >
                      Edit {String(item.petId)}
                    </button>
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      </div>
      {!canWrite && (
        <p id="no-write" class="hint">
          Editing needs a key with the inventory:write scope.
        </p>
      )}
      {view.kind === 'page' && (
        <Pager
          page={view.trail.length}
          hasNext={next !== undefined}
          onPrevious={() => setView({ ...view, trail: view.trail.slice(0, -1) })}
          onNext={() => setView({ ...view, trail: [...view.trail, next] })}
        />
      )}
      {editing && (
        <EditDialog
          item={editing}
          locations={locations.several ? locations.active : undefined}
          locationId={at}
          onClose={(saved) => {
            setEditing(undefined)
            if (saved) listing.reload()
          }}
        />
      )}
    </section>
  )
}
