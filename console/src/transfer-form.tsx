import type { StockLevel, Transfer, TransferResult } from 'petstore-client'
import { useRef, useState } from 'preact/hooks'
import { DEFAULT_LOCATION, type Locations } from './locations.js'
import { bodyText, MAX, newKey, uncertain, wholeNumber } from './moves.js'
import { Notice, Problem } from './parts.js'
import { describeProblem } from './problems.js'
import { api } from './session.js'

/**
 * Moves units of one pet from one location to another (`POST /inventory/{petId}/transfers`, one
 * transaction: both locations change or neither). The service's refusal (more than the source holds,
 * 409 `insufficient_stock`; an inactive location) is said in its words and nothing moves. Sent with an
 * Idempotency-Key, kept while the same transfer is sent again after no answer, so it moves the units once.
 */
export function TransferForm(props: {
  petId: bigint
  locations: Locations
  levels: StockLevel[] | undefined
  onMoved: (result: TransferResult) => void
}) {
  const { petId, locations } = props
  const active = locations.active
  const [from, setFrom] = useState(DEFAULT_LOCATION)
  const [to, setTo] = useState(() => active.find((l) => l.id !== DEFAULT_LOCATION)?.id ?? DEFAULT_LOCATION)
  const [units, setUnits] = useState('')
  const [note, setNote] = useState('')
  const [problem, setProblem] = useState<string | undefined>()
  const [notice, setNotice] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  // Busy, the button stays focusable (aria-disabled); this makes a second press while the first runs do nothing.
  const running = useRef(false)
  // The transfer last sent without a certain outcome, and the Idempotency-Key it went with.
  const pending = useRef<{ body: string; key: string } | undefined>(undefined)
  const held = (location: bigint) => props.levels?.find((level) => level.locationId === location)?.quantity

  const transfer = async (event: Event) => {
    event.preventDefault()
    if (running.current) return
    setNotice(undefined)
    const count = wholeNumber(units)
    if (count === undefined || count < 1 || count > MAX) return setProblem(`The number of units is a whole number from 1 to ${MAX}.`)
    if (from === to) return setProblem('Choose two different locations: the units go from one to the other.')
    const body: Transfer = { fromLocationId: from, toLocationId: to, quantity: count, ...(note.trim() ? { note: note.trim() } : {}) }
    const text = bodyText(body)
    const key = pending.current?.body === text ? pending.current.key : newKey()
    running.current = true
    setBusy(true)
    setProblem(undefined)
    try {
      const result = await api.inventory.transfer(petId, body, { idempotencyKey: key })
      pending.current = undefined
      setNotice(
        `Moved ${count} of pet ${petId} from ${locations.name(from)} to ${locations.name(to)}: ` +
          `${locations.name(from)} now holds ${result.from.quantity}, ${locations.name(to)} ${result.quantity}.`,
      )
      setUnits('')
      setNote('')
      props.onMoved(result)
    } catch (error) {
      pending.current = uncertain(error) ? { body: text, key } : undefined
      setProblem(uncertain(error) ? `${describeProblem(error)} Transferring again is safe: the units move once.` : describeProblem(error))
    } finally {
      running.current = false
      setBusy(false)
    }
  }

  const option = (location: { id: bigint; name: string }) => {
    const quantity = held(location.id)
    return (
      <option key={String(location.id)} value={String(location.id)}>
        {location.name}
        {quantity === undefined ? '' : ` (${quantity})`}
      </option>
    )
  }

  return (
    <>
      <h3 id="transfer-heading">Transfer</h3>
      <form class="controls transfer" aria-labelledby="transfer-heading" onSubmit={(e) => void transfer(e)}>
        <span class="field">
          <label for="transfer-from">From</label>
          <select id="transfer-from" value={String(from)} onChange={(e) => setFrom(BigInt(e.currentTarget.value))}>
            {active.map(option)}
          </select>
        </span>
        <span class="field">
          <label for="transfer-to">To</label>
          <select id="transfer-to" value={String(to)} onChange={(e) => setTo(BigInt(e.currentTarget.value))}>
            {active.map(option)}
          </select>
        </span>
        <span class="field">
          <label for="transfer-units">Units</label>
          <input
            id="transfer-units"
            class="units"
            inputMode="numeric"
            autocomplete="off"
            required
            value={units}
            onInput={(e) => setUnits(e.currentTarget.value)}
          />
        </span>
        <span class="field">
          <label for="transfer-note">Note</label>
          <input id="transfer-note" maxLength={500} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        </span>
        <button type="submit" aria-disabled={busy}>
          Transfer
        </button>
      </form>
      <Notice text={notice} />
      <Problem text={problem} />
    </>
  )
}
