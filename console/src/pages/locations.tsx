import { type Location, PetstoreError } from 'petstore-client'
import { useEffect, useRef, useState } from 'preact/hooks'
import { DEFAULT_LOCATION } from '../locations.js'
import { Notice, Problem, useRead } from '../parts.js'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'

/**
 * The places that hold stock (shops, a warehouse). Every key that reads the stock sees them; an admin
 * key creates one, renames one, deactivates one that holds nothing (the service's 409 says how much
 * one still holds) or activates it again. The default location is never deactivated: not offered.
 */
export function LocationsPage({ session }: { session: Session }) {
  const admin = session.can('admin')
  const listing = useRead<Location[]>(
    (signal) =>
      session.can('inventory:read')
        ? api.locations.list({ signal })
        : Promise.reject(new Error('Seeing the locations needs a key with the inventory:read scope.')),
    [],
  )
  const locations = listing.value ?? []
  const [name, setName] = useState('')
  const [renaming, setRenaming] = useState<Location | undefined>()
  const [newName, setNewName] = useState('')
  const [actionProblem, setProblem] = useState<string | undefined>()
  const [notice, setNotice] = useState<string | undefined>()
  const [busy, setBusy] = useState(false)
  const problem = actionProblem ?? listing.problem
  // Busy buttons stay focusable (aria-disabled); this makes a second press while the first runs do nothing.
  const running = useRef(false)
  const renameField = useRef<HTMLInputElement>(null)
  // The row whose Rename button takes the focus back once its rename is cancelled.
  const returnTo = useRef<bigint | undefined>(undefined)

  useEffect(() => {
    if (renaming !== undefined) renameField.current?.focus()
    else if (returnTo.current !== undefined) {
      document.querySelector<HTMLElement>(`[data-rename="${returnTo.current}"]`)?.focus()
      returnTo.current = undefined
    }
  }, [renaming])

  /** Runs one change, then reads the list again; a refusal is said in the service's words. */
  const run = async (change: () => Promise<string>) => {
    if (running.current || !admin) return
    running.current = true
    setBusy(true)
    setProblem(undefined)
    setNotice(undefined)
    try {
      setNotice(await change())
      listing.reload()
    } catch (error) {
      setProblem(describeProblem(error))
      // The service answered: what it has may have changed meanwhile.
      if (error instanceof PetstoreError) listing.reload()
    } finally {
      running.current = false
      setBusy(false)
    }
  }

  const create = (event: Event) => {
    event.preventDefault()
    void run(async () => {
      const created = await api.locations.create({ name: name.trim() })
      setName('')
      return `Location ${created.name} created: it holds nothing until stock is transferred or set there.`
    })
  }
  const rename = (event: Event) => {
    event.preventDefault()
    const location = renaming
    if (location === undefined) return
    void run(async () => {
      const renamed = await api.locations.update(location.id, { name: newName.trim() })
      setRenaming(undefined)
      return `Location ${location.name} renamed ${renamed.name}.`
    })
  }
  const setActive = (location: Location, active: boolean) =>
    void run(async () => {
      await api.locations.update(location.id, { active })
      return active
        ? `Location ${location.name} activated: it takes stock again.`
        : `Location ${location.name} deactivated: it takes no stock until it is activated again.`
    })
  const startRenaming = (location: Location) => {
    setProblem(undefined)
    setNotice(undefined)
    setNewName(location.name)
    setRenaming(location)
  }
  const stopRenaming = () => {
    returnTo.current = renaming?.id
    setRenaming(undefined)
  }

  return (
    <section aria-labelledby="locations-heading">
      <h2 id="locations-heading">Locations</h2>
      <p class="hint">
        The places that hold stock: shops, a warehouse. A pet’s quantity on the Stock page is its stock at every location together.
      </p>
      {admin ? (
        <form class="controls" onSubmit={create}>
          <span class="field">
            <label for="location-name">Name</label>
            <input id="location-name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </span>
          <button type="submit" aria-disabled={busy}>
            Create location
          </button>
        </form>
      ) : (
        <p class="hint">Creating, renaming and deactivating locations needs a key with the admin scope.</p>
      )}
      <Notice text={notice} />
      <Problem text={problem} onRetry={actionProblem === undefined ? listing.retry : undefined} />
      <div class="table-scroll">
        <table class="locations" aria-label="Locations" aria-busy={listing.busy}>
          <thead>
            <tr>
              <th scope="col" class="num col-id">
                ID
              </th>
              <th scope="col">Name</th>
              <th scope="col" class="col-state">
                State
              </th>
              {admin && (
                <th scope="col" class="col-actions">
                  <span class="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {locations.map((location) => {
              const id = String(location.id)
              const isDefault = location.id === DEFAULT_LOCATION
              return (
                <tr key={id} class={location.active ? undefined : 'inactive'}>
                  <td class="num id">{id}</td>
                  <td class="location-name">
                    {renaming?.id === location.id ? (
                      // The field's form is the one around Save name, in the row's actions (a form cannot span cells).
                      <>
                        <label for="rename-field" class="visually-hidden">
                          New name for {location.name}
                        </label>
                        <input
                          id="rename-field"
                          form="rename-form"
                          ref={renameField}
                          required
                          maxLength={100}
                          value={newName}
                          onInput={(e) => setNewName(e.currentTarget.value)}
                          onKeyDown={(e) => e.key === 'Escape' && stopRenaming()}
                        />
                      </>
                    ) : (
                      <>
                        <span>{location.name}</span>
                        {isDefault && <span class="tag">default</span>}
                      </>
                    )}
                  </td>
                  <td>{location.active ? 'Active' : 'Inactive'}</td>
                  {admin && (
                    <td>
                      {renaming?.id === location.id ? (
                        <form id="rename-form" class="row-actions" onSubmit={rename}>
                          <button type="submit" aria-disabled={busy}>
                            Save name
                          </button>
                          <button type="button" onClick={stopRenaming}>
                            Cancel
                          </button>
                        </form>
                      ) : (
                        <div class="row-actions">
                          <button
                            type="button"
                            data-rename={id}
                            aria-label={`Rename ${location.name}`}
                            aria-disabled={busy}
                            onClick={() => !busy && startRenaming(location)}
                          >
                            Rename
                          </button>
                          {isDefault ? null : location.active ? (
                            <button
                              type="button"
                              aria-label={`Deactivate ${location.name}`}
                              aria-disabled={busy}
                              onClick={() => setActive(location, false)}
                            >
                              Deactivate
                            </button>
                          ) : (
                            <button
                              type="button"
                              aria-label={`Activate ${location.name}`}
                              aria-disabled={busy}
                              onClick={() => setActive(location, true)}
                            >
                              Activate
                            </button>
                          )}
                        </div>
                      )}
                    </td>
                  )}
                </tr>
              )
            })}
          </tbody>
        </table>
      </div>
      {!listing.busy && listing.value?.length === 1 && (
        <p class="hint">
          One location so far: the console shows the stock as one store. Once a second one is active, the Stock page can show one location’s
          stock, and a pet’s page its stock at each and a transfer between them.
        </p>
      )}
    </section>
  )
}
