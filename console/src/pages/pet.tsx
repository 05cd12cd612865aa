import { type InventoryChange, type InventoryItem, type Page, PetstoreError, type StockLevel, type TransferResult } from 'petstore-client'
import { useState } from 'preact/hooks'
import { QuantityChart } from '../chart.js'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'
import { Pager, Problem, useRead } from '../parts.js'
import { useLiveChanges } from '../live.js'
import { ChangesTable, NEWEST } from '../changes-table.js'
import { type Locations, rowLocation, totalOf, totalsOver, useLocations, withLevel } from '../locations.js'
import { TransferForm } from '../transfer-form.js'

const PAGE_SIZE = 50
/** How many of the latest changes the chart draws. */
const CHART_CHANGES = 200

/** One pet: its entry, its quantity over time, and its ledger a page at a time, newest first. */
export function PetPage({ session, petId }: { session: Session; petId: bigint }) {
  // A new pet starts afresh (its first page, its own chart), whatever the previous one showed.
  return <PetView key={String(petId)} session={session} petId={petId} />
}

/** A failed read, said with what it was for. */
const failed = (what: string) => (error: unknown) => {
  throw new Error(`${what}: ${describeProblem(error)}`, { cause: error })
}

function PetView({ session, petId }: { session: Session; petId: bigint }) {
  // The `before` of each page read so far: the first is the newest row; Next page goes older.
  const [trail, setTrail] = useState<bigint[]>([NEWEST])
  const canRead = session.can('inventory:read')
  const id = String(petId)
  const entryRead = useRead<InventoryItem>(
    (signal) =>
      canRead
        ? api.inventory.get(petId, { signal }).then(
            ({ item }) => item,
            (error) => {
              throw error instanceof PetstoreError && error.code === 'not_found' ? new Error(`No inventory entry for pet ${id}.`) : error
            },
          )
        : Promise.reject(new Error('Seeing a pet needs a key with the inventory:read scope.')),
    [],
  )
  // The chart: the latest changes, read newest first and drawn oldest first.
  const chartRead = useRead<InventoryChange[]>(
    (signal) =>
      canRead
        ? api.changes
            .page({ petId, before: NEWEST, pageSize: CHART_CHANGES, signal })
            .then((page) => page.items.slice().reverse(), failed('The chart could not be drawn'))
        : new Promise<never>(() => {}), // nothing to draw; the entry's problem says why
    [],
  )
  const listing = useRead<Page<InventoryChange>>(
    (signal) =>
      canRead
        ? api.changes.page({ petId, before: trail.at(-1)!, pageSize: PAGE_SIZE, signal }).catch(failed('The changes could not be read'))
        : Promise.resolve({ items: [], next: undefined }),
    [trail],
  )
  // With several locations: the pet's stock at each (their sum is its quantity).
  const locations = useLocations(session)
  const several = locations.several
  const levelsRead = useRead<StockLevel[] | undefined>(
    (signal) => (several && canRead ? api.inventory.locations(petId, { signal }) : Promise.resolve(undefined)),
    [several],
  )
  const levels = levelsRead.value
  const entry = entryRead.value
  const history = chartRead.value
  // The chart draws the pet's quantity in all: with several locations a ledger row's is its location's.
  const drawn = history === undefined || !several ? history : levels === undefined ? undefined : totalsOver(history, levels)
  const chartProblem = chartRead.problem
  const changes = listing.value?.items ?? []
  const next = listing.value?.next
  const problem = listing.problem

  // This pet's changes made anywhere: its quantity, the chart and the first page of the table follow.
  // With several locations a row's quantity is its location's: the levels follow, and the quantity is their sum.
  useLiveChanges((change) => {
    if (change.petId !== petId) return
    if (!several && change.locationId === undefined) entryRead.update((shown) => ({ ...shown, quantity: change.quantity }))
    else levelsRead.update((shown) => shown && withLevel(shown, rowLocation(change), change.quantity))
    chartRead.update((shown) => (shown.some((c) => c.seq === change.seq) ? shown : [...shown, change].slice(-CHART_CHANGES)))
    if (trail.length === 1)
      listing.update((page) =>
        page.items.some((c) => c.seq === change.seq) ? page : { ...page, items: [change, ...page.items].slice(0, PAGE_SIZE) },
      )
  })

  return (
    <section aria-labelledby="pet-heading" class="pet">
      <p class="back">
        <a href="#/stock">Back to Stock</a>
      </p>
      <h2 id="pet-heading">Pet {id}</h2>
      <Problem text={entryRead.problem} onRetry={entryRead.retry} />
      {entry && (
        <dl class="entry">
          <div>
            <dt>Quantity</dt>
            <dd class="quantity">{levels === undefined ? entry.quantity : totalOf(levels)}</dd>
          </div>
          <div>
            <dt>Status</dt>
            <dd class="pet-status">{entry.status}</dd>
          </div>
        </dl>
      )}

      {several && entry && (
        <ByLocation
          session={session}
          petId={petId}
          locations={locations}
          levels={levels}
          problem={levelsRead.problem}
          onRetry={levelsRead.retry}
          onMoved={(result) => {
            levelsRead.update(
              (shown) =>
                shown && withLevel(withLevel(shown, result.from.locationId, result.from.quantity), result.locationId, result.quantity),
            )
            // Read again too, should the live changes be off: the levels, the chart and the table.
            levelsRead.reload()
            chartRead.reload()
            listing.reload()
          }}
        />
      )}

      <h3 id="chart-heading">Quantity over time</h3>
      <Problem text={chartProblem} onRetry={chartRead.retry} />
      {drawn === undefined ? (
        chartProblem === undefined && canRead && levelsRead.problem === undefined && <p class="hint">Reading the history…</p>
      ) : drawn.length === 0 ? (
        <p class="hint">No changes are recorded for this pet, so there is nothing to chart.</p>
      ) : (
        <figure class="chart-frame" aria-labelledby="chart-heading">
          <QuantityChart changes={drawn} petId={petId} />
          <figcaption class="hint">
            The latest {drawn.length} {drawn.length === 1 ? 'change' : 'changes'}
            {history?.length === CHART_CHANGES ? ' (older ones are in the table)' : ''}, oldest on the left
            {several ? '; the quantity at every location together' : ''}.
          </figcaption>
        </figure>
      )}

      <h3 id="changes-heading">Changes</h3>
      <Problem text={problem} onRetry={listing.retry} />
      <ChangesTable changes={changes} withPet={false} busy={listing.busy} locationName={several ? locations.name : undefined} />
      {!listing.busy && changes.length === 0 && problem === undefined && canRead && (
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

/** The pet's stock at each location, and (for a key that may write the stock) a transfer between two. */
function ByLocation(props: {
  session: Session
  petId: bigint
  locations: Locations
  levels: StockLevel[] | undefined
  problem: string | undefined
  onRetry: (() => void) | undefined
  onMoved: (result: TransferResult) => void
}) {
  const { session, petId, locations, levels } = props
  const canWrite = session.can('inventory:write')
  return (
    <>
      <h3 id="levels-heading">Stock by location</h3>
      <Problem text={props.problem} onRetry={props.onRetry} />
      <div class="table-scroll levels">
        <table aria-labelledby="levels-heading" aria-busy={levels === undefined && props.problem === undefined}>
          <thead>
            <tr>
              <th scope="col">Location</th>
              <th scope="col" class="num">
                Quantity
              </th>
            </tr>
          </thead>
          <tbody>
            {(levels ?? []).map((level) => (
              <tr key={String(level.locationId)}>
                <td>{locations.name(level.locationId)}</td>
                <td class="num">{level.quantity}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {canWrite ? (
        <TransferForm petId={petId} locations={locations} levels={levels} onMoved={props.onMoved} />
      ) : (
        <p class="hint">Transferring stock between locations needs a key with the inventory:write scope.</p>
      )}
    </>
  )
}
