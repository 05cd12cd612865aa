import type { InventoryChange } from 'petstore-client'
import { ChangesTable } from '../changes-table.js'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { useLiveChanges } from '../live.js'
import { Pager, Problem } from '../parts.js'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'

const PAGE_SIZE = 50
/** `before` past every seq: the ledger's newest row first. */
const NEWEST = 9223372036854775807n

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
      <ChangesTable changes={changes} withPet busy={loaded !== request} />
      <Pager
        page={trail.length}
        hasNext={next !== undefined}
        onPrevious={() => setTrail(trail.slice(0, -1))}
        onNext={() => next !== undefined && setTrail([...trail, next])}
      />
    </section>
  )
}
