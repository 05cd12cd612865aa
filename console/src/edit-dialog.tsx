import { type InventoryItem, type InventoryUpdate, PetstoreError } from 'petstore-client'
import { useEffect, useRef, useState } from 'preact/hooks'
import { describeProblem } from './problems.js'
import { api } from './session.js'
import { Problem } from './parts.js'

type Reason = NonNullable<InventoryUpdate['reason']>

/**
 * Sets one entry's quantity, conditionally: the save carries the ETag of the entry as the dialog read
 * it, so a change made meanwhile (another member of staff, an order) is not overwritten unseen; the
 * dialog then shows the current quantity and lets the user apply theirs over it, or discard it.
 */
export function EditDialog({ item, onClose }: { item: InventoryItem; onClose: (saved: boolean) => void }) {
  const dialog = useRef<HTMLDialogElement>(null)
  const [etag, setEtag] = useState<string | undefined>()
  const [quantity, setQuantity] = useState(String(item.quantity))
  const [reason, setReason] = useState<Reason>('count')
  const [note, setNote] = useState('')
  const [conflict, setConflict] = useState<InventoryItem | undefined>()
  const [problem, setProblem] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
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

  useEffect(() => {
    dialog.current?.showModal()
    api.inventory
      .get(item.petId)
      .then((current) => {
        setEtag(current.etag)
        setQuantity(String(current.item.quantity))
      })
      .catch((error) => setProblem(describeProblem(error)))
  }, [item.petId])

  const save = async (ifMatch: string | undefined) => {
    const value = Number(quantity)
    if (!Number.isInteger(value) || value < 0 || value > 2147483647)
      return setProblem('The quantity is a whole number from 0 to 2147483647.')
    setBusy(true)
    setProblem(undefined)
    try {
      await api.inventory.set(item.petId, { quantity: value, reason, ...(note.trim() ? { note: note.trim() } : {}) }, { ifMatch })
      finish(true)
    } catch (error) {
      if (error instanceof PetstoreError && error.code === 'precondition_failed') {
        const current = await api.inventory.get(item.petId).catch(() => undefined)
        setConflict(current?.item)
        setEtag(current?.etag)
      } else setProblem(describeProblem(error))
    } finally {
      setBusy(false)
    }
  }

  return (
    <dialog ref={dialog} aria-labelledby="edit-title" onCancel={() => finish(false)} onClose={() => finish(false)}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault()
          void save(etag)
        }}
      >
        <h3 id="edit-title">Edit pet {String(item.petId)}</h3>
        <label for="edit-quantity">Quantity</label>
        {/* Read-only until the entry and its ETag are read, so the read cannot overwrite what was typed. */}
        <input
          id="edit-quantity"
          inputMode="numeric"
          required
          readOnly={etag === undefined}
          value={quantity}
          onInput={(e) => setQuantity(e.currentTarget.value)}
        />
        <label for="edit-reason">Reason</label>
        <select id="edit-reason" value={reason} onChange={(e) => setReason(e.currentTarget.value as Reason)}>
          <option value="arrival">arrival</option>
          <option value="return">return</option>
          <option value="count">count</option>
          <option value="adjustment">adjustment</option>
        </select>
        <label for="edit-note">Note</label>
        <input id="edit-note" maxLength={500} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        {conflict && (
          <div role="alert" class="conflict">
            <p>
              Someone changed this entry meanwhile: its quantity is now <strong>{conflict.quantity}</strong>.
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
          <button type="submit" disabled={busy || etag === undefined || conflict !== undefined}>
            Save
          </button>
        </div>
      </form>
    </dialog>
  )
}
