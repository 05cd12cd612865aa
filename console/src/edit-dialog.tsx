import {
  type InventoryAdjustment,
  type InventoryItem,
  type InventoryUpdate,
  type Location,
  PetstoreError,
  type StockLevel,
} from 'petstore-client'
import { useEffect, useRef, useState } from 'preact/hooks'
import { useLiveChanges } from './live.js'
import { DEFAULT_LOCATION, rowLocation, withLevel } from './locations.js'
import { bodyText, MAX, newKey, uncertain, wholeNumber } from './moves.js'
import { describeProblem } from './problems.js'
import { api } from './session.js'
import { Problem } from './parts.js'

type SetReason = NonNullable<InventoryUpdate['reason']>
type MoveReason = NonNullable<InventoryAdjustment['reason']>
/** What the number in the dialog means: the new quantity, or units that arrived or went. */
type Mode = 'set' | 'receive' | 'remove'

/** Each kind of change: its field's label, the reasons it offers (a set: the four it always had, then damage and loss), and the preselected one. */
const MODES: { mode: Mode; label: string; field: string; reasons: SetReason[]; preselected: SetReason }[] = [
  {
    mode: 'set',
    label: 'Set to',
    field: 'Quantity',
    reasons: ['arrival', 'return', 'count', 'adjustment', 'damage', 'loss'],
    preselected: 'count',
  },
  { mode: 'receive', label: 'Receive', field: 'Units to receive', reasons: ['arrival', 'return', 'adjustment'], preselected: 'arrival' },
  { mode: 'remove', label: 'Remove', field: 'Units to remove', reasons: ['damage', 'loss', 'adjustment'], preselected: 'damage' },
]

/**
 * Changes one entry's stock: sets its quantity, or receives or removes a number of units.
 *
 * A set is conditional: the save carries the ETag of the entry as the dialog read it, so a change made
 * meanwhile (another member of staff, an order) is not overwritten unseen; the dialog then shows the
 * current quantity and lets the user apply theirs over it, or discard it. Receiving and removing are
 * adjustments (a delta), which need no ETag: they add to or take from whatever the entry holds then,
 * and the service refuses one that would take it below zero or past the maximum, in words shown here.
 * Each is sent with an Idempotency-Key, kept while the same adjustment is saved again after the service
 * did not answer, so that saving again cannot count the units twice.
 *
 * With `locations` (the store's active ones, when there are several), the change applies at one of
 * them, `locationId` (the default location unless given) first: the dialog shows and sets that
 * location's stock, and the write names it. The ETag is still the entry's, so a change anywhere
 * meanwhile stops a set.
 */
export function EditDialog({
  item,
  locations,
  locationId,
  onClose,
}: {
  item: InventoryItem
  locations?: Location[] | undefined
  locationId?: bigint | undefined
  onClose: (saved: boolean) => void
}) {
  const several = locations !== undefined && locations.length > 1
  const dialog = useRef<HTMLDialogElement>(null)
  const [etag, setEtag] = useState<string | undefined>()
  // The entry's quantity (one location), or the pet's stock at each location (several).
  const [entryQuantity, setEntryQuantity] = useState<number | undefined>()
  const [levels, setLevels] = useState<StockLevel[] | undefined>()
  const [at, setAt] = useState(locationId ?? DEFAULT_LOCATION)
  const [mode, setMode] = useState<Mode>('set')
  const [quantity, setQuantity] = useState(String(item.quantity))
  const [units, setUnits] = useState('')
  const [reason, setReason] = useState<SetReason>('count')
  const [note, setNote] = useState('')
  const [conflict, setConflict] = useState<number | undefined>()
  const [problem, setProblem] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  // The adjustment last sent without a certain outcome, and the Idempotency-Key it went with.
  const pending = useRef<{ body: string; key: string } | undefined>(undefined)
  // Every way out goes through the dialog's close(), so the browser returns focus to the button that
  // opened it (removing an open dialog would leave focus nowhere), and the outcome is reported at once,
  // Escape's too (its cancel event). Not from the close event: the browser fires it with the next frame,
  // and until then the page kept this dialog as its editor, so an Enter on the next Edit button before
  // that frame (a busy machine, a quick keyboard user) reopened this dialog for that entry, and the late
  // event then closed it for good. The close event reports only a way out not seen here, once.
  const reported = useRef(false)
  const finish = (saved: boolean) => {
    dialog.current?.close()
    if (reported.current) return
    reported.current = true
    onClose(saved)
  }

  /** What a location holds in `read` (0 where the pet was never stocked). */
  const levelAt = (read: StockLevel[], location: bigint) => read.find((level) => level.locationId === location)?.quantity ?? 0
  const nameOf = (location: bigint) => locations?.find((l) => l.id === location)?.name ?? `Location ${location}`

  useEffect(() => {
    dialog.current?.showModal()
    Promise.all([api.inventory.get(item.petId), several ? api.inventory.locations(item.petId) : undefined])
      .then(([read, stocked]) => {
        setEtag(read.etag)
        setEntryQuantity(read.item.quantity)
        setLevels(stocked)
        setQuantity(String(stocked === undefined ? read.item.quantity : levelAt(stocked, at)))
      })
      .catch((error) => setProblem(describeProblem(error)))
  }, [item.petId])
  // What the entry (or each location) holds, as it changes anywhere while the dialog is open (the ETag stays as read).
  useLiveChanges((change) => {
    if (change.petId !== item.petId) return
    if (several) setLevels((read) => read && withLevel(read, rowLocation(change), change.quantity))
    else setEntryQuantity(change.quantity)
  })
  const current = several ? (levels === undefined ? undefined : levelAt(levels, at)) : entryQuantity

  const shown = MODES.find((m) => m.mode === mode)!
  const choose = (next: Mode) => {
    setMode(next)
    setReason(MODES.find((m) => m.mode === next)!.preselected)
    setProblem(undefined)
  }
  const chooseLocation = (next: bigint) => {
    setAt(next)
    setConflict(undefined)
    setProblem(undefined)
    if (levels !== undefined) setQuantity(String(levelAt(levels, next)))
  }
  const withNote = () => (note.trim() ? { note: note.trim() } : {})
  // The location named only with several: a one-location store's writes are as they always were.
  const atLocation = () => (several ? { locationId: at } : {})

  const save = async (ifMatch: string | undefined) => {
    const value = wholeNumber(quantity)
    if (value === undefined || value > MAX) return setProblem(`The quantity is a whole number from 0 to ${MAX}.`)
    setBusy(true)
    setProblem(undefined)
    try {
      await api.inventory.set(item.petId, { quantity: value, reason, ...withNote(), ...atLocation() }, { ifMatch })
      finish(true)
    } catch (error) {
      if (error instanceof PetstoreError && error.code === 'precondition_failed') {
        const [read, stocked] = await Promise.all([
          api.inventory.get(item.petId).catch(() => undefined),
          several ? api.inventory.locations(item.petId).catch(() => undefined) : undefined,
        ])
        if (stocked !== undefined) setLevels(stocked)
        setConflict(several ? (stocked === undefined ? undefined : levelAt(stocked, at)) : read?.item.quantity)
        setEtag(read?.etag)
      } else setProblem(describeProblem(error))
    } finally {
      setBusy(false)
    }
  }

  const move = async () => {
    const count = wholeNumber(units)
    if (count === undefined || count < 1 || count > MAX) return setProblem(`The number of units is a whole number from 1 to ${MAX}.`)
    const adjustment: InventoryAdjustment = {
      delta: mode === 'remove' ? -count : count,
      reason: reason as MoveReason,
      ...withNote(),
      ...atLocation(),
    }
    const body = bodyText(adjustment)
    const key = pending.current?.body === body ? pending.current.key : newKey()
    setBusy(true)
    setProblem(undefined)
    try {
      await api.inventory.adjust(item.petId, adjustment, { idempotencyKey: key })
      pending.current = undefined
      finish(true)
    } catch (error) {
      pending.current = uncertain(error) ? { body, key } : undefined
      setProblem(uncertain(error) ? `${describeProblem(error)} Saving it again is safe: the units count once.` : describeProblem(error))
    } finally {
      setBusy(false)
    }
  }

  const after =
    mode === 'set' || current === undefined || wholeNumber(units) === undefined
      ? undefined
      : current + (mode === 'remove' ? -1 : 1) * wholeNumber(units)!
  const ready = etag !== undefined && (!several || levels !== undefined)
  const settable = mode !== 'set' || ready
  const where = several ? ` at ${nameOf(at)}` : ''

  return (
    <dialog ref={dialog} aria-labelledby="edit-title" onCancel={() => finish(false)} onClose={() => finish(false)}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault()
          if (busy || !settable) return
          void (mode === 'set' ? save(etag) : move())
        }}
      >
        <h3 id="edit-title">Edit pet {String(item.petId)}</h3>
        {several && (
          <>
            <label for="edit-location">Location</label>
            <select id="edit-location" value={String(at)} onChange={(e) => chooseLocation(BigInt(e.currentTarget.value))}>
              {locations.map((location) => (
                <option key={String(location.id)} value={String(location.id)}>
                  {location.name}
                </option>
              ))}
            </select>
          </>
        )}
        <fieldset class="modes">
          <legend>Change</legend>
          {MODES.map((m) => (
            <label key={m.mode} class="check">
              <input type="radio" name="edit-mode" value={m.mode} checked={mode === m.mode} onChange={() => choose(m.mode)} />
              {m.label}
            </label>
          ))}
        </fieldset>
        <label for="edit-quantity">{shown.field}</label>
        {/* A set's field is read-only until the entry and its ETag are read, so the read cannot overwrite what was typed. */}
        <input
          id="edit-quantity"
          inputMode="numeric"
          autocomplete="off"
          autofocus
          required
          aria-describedby="edit-stock"
          readOnly={mode === 'set' && !ready}
          value={mode === 'set' ? quantity : units}
          onInput={(e) => (mode === 'set' ? setQuantity : setUnits)(e.currentTarget.value)}
        />
        <p id="edit-stock" class="hint">
          {current === undefined ? 'Reading the entry…' : `In stock${where} now: ${current}`}
          {after !== undefined && after >= 0 && after <= MAX && `; after this: ${after}`}
        </p>
        <label for="edit-reason">Reason</label>
        <select id="edit-reason" value={reason} onChange={(e) => setReason(e.currentTarget.value as SetReason)}>
          {shown.reasons.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
        <label for="edit-note">Note</label>
        <input id="edit-note" maxLength={500} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        {conflict !== undefined && mode === 'set' && (
          <div role="alert" class="conflict">
            <p>
              Someone changed this entry meanwhile: its quantity{where} is now <strong>{conflict}</strong>.
            </p>
            <button type="button" disabled={busy} onClick={() => void save(etag)}>
              Re-apply {quantity}
            </button>
            <button type="button" onClick={() => finish(true)}>
              Discard
            </button>
          </div>
        )}
        <Problem text={problem} />
        <div class="actions">
          <button type="button" onClick={() => finish(false)}>
            Cancel
          </button>
          <button type="submit" disabled={busy || !settable || (mode === 'set' && conflict !== undefined)}>
            Save
          </button>
        </div>
      </form>
    </dialog>
  )
}
