import { type InventoryItem, PetstoreError, type PetStatus } from 'petstore-client'
import { useEffect, useState } from 'preact/hooks'
import { EditDialog } from '../edit-dialog.js'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'

const PAGE_SIZE = 50
const THRESHOLD_KEY = 'petstore.console.lowStock'

/** What the table shows: a page of the list (with the `after` of each page before it), or one entry asked for by id. */
type View = { kind: 'page'; status: PetStatus | ''; trail: (bigint | undefined)[] } | { kind: 'pet'; petId: bigint }

export function StockPage({ session }: { session: Session }) {
  const [view, setView] = useState<View>({ kind: 'page', status: '', trail: [undefined] })
  const [items, setItems] = useState<InventoryItem[]>([])
  const [next, setNext] = useState<bigint | undefined>()
  const [problem, setProblem] = useState<string | undefined>()
  const [loading, setLoading] = useState(true)
  const [petInput, setPetInput] = useState('')
  const [threshold, setThreshold] = useState(() => Number(localStorage.getItem(THRESHOLD_KEY) ?? '5'))
  const [editing, setEditing] = useState<InventoryItem | undefined>()
  const [reload, setReload] = useState(0)

  useEffect(() => {
    const controller = new AbortController()
    setLoading(true)
    setProblem(undefined)
    const load =
      view.kind === 'pet'
        ? api.inventory.get(view.petId, { signal: controller.signal }).then(({ item }) => ({ items: [item], next: undefined }))
        : api.inventory.page({ after: view.trail.at(-1), status: view.status || undefined, pageSize: PAGE_SIZE, signal: controller.signal })
    load
      .then((page) => {
        setItems(page.items)
        setNext(page.next)
      })
      .catch((error) => {
        if (controller.signal.aborted) return
        setItems([])
        setNext(undefined)
        setProblem(
          error instanceof PetstoreError && error.code === 'not_found' ? 'No inventory entry for that pet.' : describeProblem(error),
        )
      })
      .finally(() => controller.signal.aborted || setLoading(false))
    return () => controller.abort()
  }, [view, reload])

  const showPet = (event: Event) => {
    event.preventDefault()
    const text = petInput.trim()
    if (!/^-?\d{1,19}$/.test(text)) return setProblem('A pet ID is a whole number.')
    setView({ kind: 'pet', petId: BigInt(text) })
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
            <button type="button" onClick={() => setView({ kind: 'page', status: '', trail: [undefined] })}>
              Show all
            </button>
          )}
        </form>
        <label for="status-filter">Status</label>
        <select
          id="status-filter"
          value={view.kind === 'page' ? view.status : ''}
          onChange={(e) => setView({ kind: 'page', status: e.currentTarget.value as PetStatus | '', trail: [undefined] })}
        >
          <option value="">All</option>
          <option value="available">Available</option>
          <option value="pending">Pending</option>
          <option value="sold">Sold</option>
        </select>
        <label for="low-stock">Low-stock threshold</label>
        <input id="low-stock" type="number" min={0} value={threshold} onInput={(e) => setLowStock(Number(e.currentTarget.value) || 0)} />
      </div>
      {problem && (
        <p role="alert" class="problem">
          {problem}
        </p>
      )}
      <div class="table-scroll">
        <table aria-label="Stock" aria-busy={loading}>
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
                  <td class="id">{String(item.petId)}</td>
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
        <div class="pager">
          <button type="button" disabled={view.trail.length <= 1} onClick={() => setView({ ...view, trail: view.trail.slice(0, -1) })}>
            Previous page
          </button>
          <span>Page {view.trail.length}</span>
          <button type="button" disabled={next === undefined} onClick={() => setView({ ...view, trail: [...view.trail, next] })}>
            Next page
          </button>
        </div>
      )}
      {editing && (
        <EditDialog
          item={editing}
          onClose={(saved) => {
            setEditing(undefined)
            if (saved) setReload((n) => n + 1)
          }}
        />
      )}
    </section>
  )
}
