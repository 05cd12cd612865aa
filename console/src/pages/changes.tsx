import type { InventoryChange } from 'petstore-client'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { useLiveChanges } from '../live.js'
import { Pager, Problem } from '../parts.js'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'

const PAGE_SIZE = 50
/** `before` past every seq: the ledger's newest row first. */
const NEWEST = 9223372036854775807n

/** The ledger's columns, shared with a pet's own Changes table. */
export function ChangeRows({ changes, withPet }: { changes: InventoryChange[]; withPet: boolean }) {
  return (
    <>
      {changes.map((change) => (
        <tr key={String(change.seq)}>
          <td>
            <time dateTime={change.at}>{new Date(change.at).toLocaleString()}</time>
          </td>
          {withPet && (
            <td class="id">
              <a href={`#/pets/${change.petId}`}>{String(change.petId)}</a>
            </td>
          )}
          <td>{change.reason}</td>
          <td class="num">{change.previousQuantity ?? '–'}</td>
          <td class="num">{change.quantity}</td>
          <td>{change.note ?? ''}</td>
          <td class="id">{change.orderId === null ? '' : String(change.orderId)}</td>
          <td class="id">{change.keyId === null ? 'CLI' : String(change.keyId)}</td>
        </tr>
      ))}
    </>
  )
}

/** The store-wide ledger, newest first, a page at a time; optionally one pet's rows. */
export function ChangesPage({ session }: { session: Session }) {
  const [petFilter, setPetFilter] = useState<bigint | undefined>()
  const [petInput, setPetInput] = useState('')
  const [trail, setTrail] = useState<bigint[]>([NEWEST])
  const [changes, setChanges] = useState<InventoryChange[]>([])
  const [next, setNext] = useState<bigint | undefined>()
  const [problem, setProblem] = useState<string | undefined>()
  const request = useMemo(() => ({}), [petFilter, trail])
  const [loaded, setLoaded] = useState<object>()

  useEffect(() => {
    if (!session.can('inventory:read')) {
      setLoaded(request)
      return setProblem('Reading the ledger needs a key with the inventory:read scope.')
    }
    const controller = new AbortController()
    api.changes
      .page({ before: trail.at(-1), petId: petFilter, pageSize: PAGE_SIZE, signal: controller.signal })
      .then((page) => {
        setChanges(page.items)
        setNext(page.next)
        setProblem(undefined)
      })
      .catch((error) => controller.signal.aborted || setProblem(describeProblem(error)))
      .finally(() => controller.signal.aborted || setLoaded(request))
    return () => controller.abort()
  }, [request])

  // On the first page, new rows arrive on top as they are committed.
  useLiveChanges((change) => {
    if (trail.length !== 1 || (petFilter !== undefined && change.petId !== petFilter)) return
    setChanges((shown) => (shown.some((c) => c.seq === change.seq) ? shown : [change, ...shown].slice(0, PAGE_SIZE)))
  })

  const filter = (event: Event) => {
    event.preventDefault()
    const text = petInput.trim()
    if (text !== '' && !/^-?\d{1,19}$/.test(text)) return setProblem('A pet ID is a whole number.')
    setPetFilter(text === '' ? undefined : BigInt(text))
    setTrail([NEWEST])
  }

  return (
    <section aria-labelledby="changes-heading">
      <h2 id="changes-heading">Changes</h2>
      <form class="controls" onSubmit={filter}>
        <label for="changes-pet">Pet ID</label>
        <input id="changes-pet" inputMode="numeric" value={petInput} onInput={(e) => setPetInput(e.currentTarget.value)} />
        <button type="submit">Filter</button>
      </form>
      <Problem text={problem} />
      <div class="table-scroll">
        <table aria-label="Changes" aria-busy={loaded !== request}>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Pet</th>
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
            <ChangeRows changes={changes} withPet />
          </tbody>
        </table>
      </div>
      <Pager
        page={trail.length}
        hasNext={next !== undefined}
        onPrevious={() => setTrail(trail.slice(0, -1))}
        onNext={() => next !== undefined && setTrail([...trail, next])}
      />
    </section>
  )
}
