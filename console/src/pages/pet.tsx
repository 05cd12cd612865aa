import { type InventoryChange, type InventoryItem, PetstoreError } from 'petstore-client'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { QuantityChart } from '../chart.js'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'
import { Pager, Problem } from '../parts.js'
import { useLiveChanges } from '../live.js'
import { ChangesTable } from '../changes-table.js'

const PAGE_SIZE = 50
/** How many of the latest changes the chart draws. */
const CHART_CHANGES = 200
/** `before` this reads the ledger from its newest row (the int64 maximum). */
const NEWEST = 9223372036854775807n

/** One pet: its entry, its quantity over time, and its ledger a page at a time, newest first. */
export function PetPage({ session, petId }: { session: Session; petId: bigint }) {
  // A new pet starts afresh (its first page, its own chart), whatever the previous one showed.
  return <PetView key={String(petId)} session={session} petId={petId} />
}

function PetView({ session, petId }: { session: Session; petId: bigint }) {
  const [entry, setEntry] = useState<InventoryItem | undefined>()
  const [entryProblem, setEntryProblem] = useState<string | undefined>()
  const [history, setHistory] = useState<InventoryChange[] | undefined>()
  const [chartProblem, setChartProblem] = useState<string | undefined>()
  // The `before` of each page read so far: the first is the newest row; Next page goes older.
  const [trail, setTrail] = useState<bigint[]>([NEWEST])
  const [changes, setChanges] = useState<InventoryChange[]>([])
  const [next, setNext] = useState<bigint | undefined>()
  const [problem, setProblem] = useState<string | undefined>()
  // As on the Stock page: the table is busy from the render that asks for new rows until they are in.
  const request = useMemo(() => ({}), [trail])
  const [loaded, setLoaded] = useState<object>()
  const canRead = session.can('inventory:read')
  const id = String(petId)

  useEffect(() => {
    if (!canRead) return setEntryProblem('Seeing a pet needs a key with the inventory:read scope.')
    const controller = new AbortController()
    api.inventory
      .get(petId, { signal: controller.signal })
      .then(({ item }) => setEntry(item))
      .catch((error) => {
        if (controller.signal.aborted) return
        setEntryProblem(
          error instanceof PetstoreError && error.code === 'not_found' ? `No inventory entry for pet ${id}.` : describeProblem(error),
        )
      })
    // The chart: the latest changes, read newest first and drawn oldest first.
    api.changes
      .page({ petId, before: NEWEST, pageSize: CHART_CHANGES, signal: controller.signal })
      .then((page) => setHistory(page.items.slice().reverse()))
      .catch((error) => controller.signal.aborted || setChartProblem(`The chart could not be drawn: ${describeProblem(error)}`))
    return () => controller.abort()
  }, [])

  // This pet's changes made anywhere: its quantity, the chart and the first page of the table follow.
  useLiveChanges((change) => {
    if (change.petId !== petId) return
    setEntry((shown) => shown && { ...shown, quantity: change.quantity })
    setHistory((shown) => shown && (shown.some((c) => c.seq === change.seq) ? shown : [...shown, change].slice(-CHART_CHANGES)))
    if (trail.length === 1)
      setChanges((shown) => (shown.some((c) => c.seq === change.seq) ? shown : [change, ...shown].slice(0, PAGE_SIZE)))
  })

  useEffect(() => {
    if (!canRead) return setLoaded(request)
    const controller = new AbortController()
    api.changes
      .page({ petId, before: trail.at(-1)!, pageSize: PAGE_SIZE, signal: controller.signal })
      .then((page) => {
        setChanges(page.items)
        setNext(page.next)
        setProblem(undefined)
      })
      .catch((error) => controller.signal.aborted || setProblem(`The changes could not be read: ${describeProblem(error)}`))
      .finally(() => controller.signal.aborted || setLoaded(request))
    return () => controller.abort()
  }, [request])

  return (
    <section aria-labelledby="pet-heading" class="pet">
      <p class="back">
        <a href="#/stock">Back to Stock</a>
      </p>
      <h2 id="pet-heading">Pet {id}</h2>
      <Problem text={entryProblem} />
      {entry && (
        <dl class="entry">
          <div>
            <dt>Quantity</dt>
            <dd class="quantity">{entry.quantity}</dd>
          </div>
          <div>
            <dt>Status</dt>
            <dd class="pet-status">{entry.status}</dd>
          </div>
        </dl>
      )}

      <h3 id="chart-heading">Quantity over time</h3>
      <Problem text={chartProblem} />
      {history === undefined ? (
        chartProblem === undefined && canRead && <p class="hint">Reading the history…</p>
      ) : history.length === 0 ? (
        <p class="hint">No changes are recorded for this pet, so there is nothing to chart.</p>
      ) : (
        <figure class="chart-frame" aria-labelledby="chart-heading">
          <QuantityChart changes={history} petId={petId} />
          <figcaption class="hint">
            The latest {history.length} {history.length === 1 ? 'change' : 'changes'}
            {history.length === CHART_CHANGES ? ' (older ones are in the table)' : ''}, oldest on the left.
          </figcaption>
        </figure>
      )}

      <h3 id="changes-heading">Changes</h3>
      <Problem text={problem} />
      <ChangesTable changes={changes} withPet={false} busy={loaded !== request} />
      {loaded === request && changes.length === 0 && problem === undefined && canRead && (
        <p class="hint">{trail.length === 1 ? 'No changes are recorded for this pet.' : 'No older changes.'}</p>
      )}
      <Pager
        page={trail.length}
        hasNext={next !== undefined}
        onPrevious={() => setTrail(trail.slice(0, -1))}
        onNext={() => next !== undefined && setTrail([...trail, next])}
      />
    </section>
  )
}
