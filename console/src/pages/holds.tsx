import { type Page, PetstoreError, type Reservation } from 'petstore-client'
import { useEffect, useRef, useState } from 'preact/hooks'
import { Notice, Pager, Problem, useRead } from '../parts.js'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'

const PAGE_SIZE = 50

const clock = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' })
const dated = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })
/** When a hold expires: its time, with the date too when that is not today (a hold lasts up to 4 hours, so across midnight). */
const expiry = (at: number, now: number) => (new Date(at).toDateString() === new Date(now).toDateString() ? clock : dated).format(at)

/** Seconds as staff read them: `42 s`, `9 min 05 s`, `1 h 02 min 05 s`. */
function timeLeft(seconds: number): string {
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = String(seconds % 60).padStart(2, '0')
  if (h > 0) return `${h} h ${String(m).padStart(2, '0')} min ${s} s`
  return m > 0 ? `${m} min ${s} s` : `${seconds % 60} s`
}

/** A hold's lines in words: `2 of pet 1, 1 of pet 4`. */
const inWords = (hold: Reservation) => hold.lines.map((line) => `${line.quantity} of pet ${line.petId}`).join(', ')

/** The time now, again every second while `running`: a countdown that moves without reading anything again. */
function useClock(running: boolean): number {
  const [now, setNow] = useState(Date.now)
  useEffect(() => {
    if (!running) return
    setNow(Date.now())
    const timer = setInterval(() => setNow(Date.now()), 1000)
    return () => clearInterval(timer)
  }, [running])
  return now
}

/**
 * Active holds (a checkout's stock held out of the inventory until it is confirmed, released or
 * expires): what each holds and how long it has left, counting down in place; Release gives the units
 * back, after a confirmation. A hold that reached its expiry says "expiring" until the list is read
 * again (the service gives its units back within 2 s of it); one that ended elsewhere meanwhile is
 * refused by the service (409) in its words, and the list is read again.
 */
export function HoldsPage({ session }: { session: Session }) {
  const [trail, setTrail] = useState<(bigint | undefined)[]>([undefined])
  const [actionProblem, setProblem] = useState<string | undefined>()
  const [notice, setNotice] = useState<string | undefined>()
  const [confirming, setConfirming] = useState<bigint | undefined>()
  const [busy, setBusy] = useState(false)
  const canWrite = session.can('orders:write')
  const listing = useRead<Page<Reservation>>(
    (signal) =>
      session.can('orders:read')
        ? api.reservations.page({ status: 'active', after: trail.at(-1), pageSize: PAGE_SIZE, signal })
        : Promise.reject(new Error('Seeing holds needs a key with the orders:read scope.')),
    [trail],
  )
  const holds = listing.value?.items ?? []
  const next = listing.value?.next
  const problem = actionProblem ?? listing.problem
  const now = useClock(holds.length > 0)

  const refresh = () => {
    setProblem(undefined)
    setNotice(undefined)
    setConfirming(undefined)
    listing.reload()
  }

  // Busy buttons stay focusable (aria-disabled, not disabled: a disabled button drops the keyboard's
  // focus); this guard makes a second press while the first runs do nothing.
  const running = useRef(false)
  const release = async (hold: Reservation) => {
    if (running.current || !canWrite) return
    running.current = true
    setBusy(true)
    setConfirming(undefined)
    setProblem(undefined)
    setNotice(undefined)
    try {
      const released = await api.reservations.release(hold.id)
      setNotice(`Hold ${released.id} released: ${inWords(released)} back in stock.`)
      listing.reload()
    } catch (error) {
      // A 409 (the hold expired, was released or confirmed meanwhile) is said in the API's own words.
      setProblem(describeProblem(error))
      // The service answered: read the list again, so a hold that ended elsewhere leaves it.
      if (error instanceof PetstoreError) listing.reload()
    } finally {
      running.current = false
      setBusy(false)
    }
  }

  return (
    <section aria-labelledby="holds-heading">
      <h2 id="holds-heading">Holds</h2>
      <p class="hint">
        Stock held for a checkout: out of the inventory until the hold is confirmed into orders, released, or expires by itself.
      </p>
      <div class="controls">
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>
      <Notice text={notice} />
      <Problem text={problem} onRetry={actionProblem === undefined ? listing.retry : undefined} />
      {!canWrite && (
        <p id="no-hold-write" class="hint">
          Releasing holds needs a key with the orders:write scope.
        </p>
      )}
      {!listing.busy && listing.value?.items.length === 0 && trail.length === 1 && <p>No active holds.</p>}
      <div class="table-scroll">
        {/* Cards on a narrow screen; the roles keep it a table for screen readers whatever the CSS does. */}
        <table class="cards holds" role="table" aria-label="Active holds" aria-busy={listing.busy}>
          <thead role="rowgroup">
            <tr role="row">
              <th role="columnheader" scope="col">
                Hold
              </th>
              <th role="columnheader" scope="col">
                Reference
              </th>
              <th role="columnheader" scope="col">
                Lines
              </th>
              <th role="columnheader" scope="col">
                Expires at
              </th>
              <th role="columnheader" scope="col" class="num">
                Time left
              </th>
              <th role="columnheader" scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody role="rowgroup">
            {holds.map((hold) => {
              const at = Date.parse(hold.expiresAt)
              const left = Math.ceil((at - now) / 1000)
              const id = String(hold.id)
              return (
                <tr role="row" key={id} class={left > 0 ? undefined : 'expiring'}>
                  <td role="cell" data-label="Hold" class="id">
                    <span>{id}</span>
                  </td>
                  <td role="cell" data-label="Reference" class="reference">
                    <span>{hold.reference ?? '—'}</span>
                  </td>
                  <td role="cell" data-label="Lines">
                    <ul class="hold-lines">
                      {hold.lines.map((line) => (
                        <li key={String(line.petId)}>
                          <a href={`#/pets/${line.petId}`}>Pet {String(line.petId)}</a> × {line.quantity}
                        </li>
                      ))}
                    </ul>
                  </td>
                  <td role="cell" data-label="Expires at">
                    <time dateTime={hold.expiresAt}>{expiry(at, now)}</time>
                  </td>
                  <td role="cell" data-label="Time left" class="num time-left">
                    <span>{left > 0 ? timeLeft(left) : 'expiring'}</span>
                  </td>
                  <td role="cell">
                    <div class="row-actions">
                      {confirming === hold.id ? (
                        <button
                          type="button"
                          aria-label={`Confirm releasing hold ${id}`}
                          aria-disabled={busy}
                          onClick={() => void release(hold)}
                        >
                          Confirm releasing
                        </button>
                      ) : (
                        <button
                          type="button"
                          aria-label={`Release hold ${id}`}
                          aria-disabled={busy || !canWrite}
                          aria-describedby={canWrite ? undefined : 'no-hold-write'}
                          onClick={() => canWrite && !busy && setConfirming(hold.id)}
                        >
                          Release
                        </button>
                      )}
                    </div>
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      </div>
      <Pager
        page={trail.length}
        hasNext={next !== undefined}
        onPrevious={() => setTrail(trail.slice(0, -1))}
        onNext={() => setTrail([...trail, next])}
      />
    </section>
  )
}
