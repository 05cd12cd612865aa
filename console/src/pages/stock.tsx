import { type InventoryItem, type Page, PetstoreError, type PetStatus } from 'petstore-client'
import { useState } from 'preact/hooks'
import { EditDialog } from '../edit-dialog.js'
import { useLiveChanges } from '../live.js'
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

export function StockPage({ session }: { session: Session }) {
  const [view, setView] = useState<View>({ kind: 'page', status: '', trail: [undefined] })
  const [inputProblem, setInputProblem] = useState<string | undefined>()
  const [petInput, setPetInput] = useState('')
  const [threshold, setThreshold] = useState(() => Number(localStorage.getItem(THRESHOLD_KEY) ?? '5'))
  const [editing, setEditing] = useState<InventoryItem | undefined>()
  const listing = useRead<Page<InventoryItem>>(
    (signal) =>
      view.kind === 'pet'
        ? api.inventory.get(view.petId, { signal }).then(({ item }) => ({ items: [item], next: undefined }), noEntry)
        : api.inventory.page({ after: view.trail.at(-1), status: view.status || undefined, pageSize: PAGE_SIZE, signal }),
    [view],
  )
  const items = listing.value?.items ?? []
  const next = listing.value?.next
  const problem = inputProblem ?? listing.problem
  const show = (shown: View) => {
    setInputProblem(undefined)
    setView(shown)
  }

  // A change made anywhere shows in the rows on screen at once.
  useLiveChanges((change) =>
    listing.update((page) =>
      page.items.some((i) => i.petId === change.petId)
        ? { ...page, items: page.items.map((i) => (i.petId === change.petId ? { ...i, quantity: change.quantity } : i)) }
        : page,
    ),
  )

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
        <label for="low-stock">Low-stock threshold</label>
        <input id="low-stock" type="number" min={0} value={threshold} onInput={(e) => setLowStock(Number(e.currentTarget.value) || 0)} />
      </div>
      <Problem text={problem} onRetry={inputProblem === undefined ? listing.retry : undefined} />
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
          onClose={(saved) => {
            setEditing(undefined)
            if (saved) listing.reload()
          }}
        />
      )}
    </section>
  )
}
