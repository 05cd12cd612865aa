import type { ApiKey, NewApiKey, Scope } from 'petstore-client'
import { useState } from 'preact/hooks'
import { Notice, Problem, useRead } from '../parts.js'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'

const SCOPES: Scope[] = ['inventory:read', 'inventory:write', 'orders:read', 'orders:write', 'pets:read', 'admin']
const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' })

/** API keys (admin): create one with the scopes it needs, its token shown this once; revoke one. */
export function KeysPage({ session }: { session: Session }) {
  const listing = useRead(
    (signal) =>
      session.can('admin') ? api.keys.list({ signal }) : Promise.reject(new Error('Managing keys needs a key with the admin scope.')),
    [],
  )
  const keys = listing.value ?? []
  const [actionProblem, setProblem] = useState<string | undefined>()
  const problem = actionProblem ?? listing.problem
  const [name, setName] = useState('')
  const [scopes, setScopes] = useState<Scope[]>(['inventory:read'])
  const [created, setCreated] = useState<NewApiKey | undefined>()
  const [copied, setCopied] = useState(false)
  const [confirming, setConfirming] = useState<bigint | undefined>()
  const [notice, setNotice] = useState<string | undefined>()

  const create = async (event: Event) => {
    event.preventDefault()
    setProblem(undefined)
    setCopied(false)
    try {
      setCreated(await api.keys.create({ name: name.trim(), scopes }))
      setName('')
      listing.reload()
    } catch (error) {
      setProblem(describeProblem(error))
    }
  }
  const revoke = async (key: ApiKey) => {
    setConfirming(undefined)
    setNotice(undefined)
    try {
      await api.keys.revoke(key.id)
      setNotice(`Key ${key.name} revoked: it is refused from now on.`)
      listing.reload()
    } catch (error) {
      setProblem(describeProblem(error))
    }
  }
  const copy = async () => {
    if (created === undefined) return
    await navigator.clipboard.writeText(created.token).then(
      () => setCopied(true),
      () => setProblem('The browser did not allow copying: select the token and copy it by hand.'),
    )
  }
  const toggle = (scope: Scope, on: boolean) => setScopes((now) => (on ? [...now, scope] : now.filter((s) => s !== scope)))

  return (
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">Keys</h2>
      <form class="stack" onSubmit={create}>
        <label for="key-name">Name</label>
        <input
          id="key-name"
          required
          pattern="[A-Za-z][A-Za-z0-9_.\-]{0,63}"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <fieldset>
          <legend>Scopes</legend>
          {SCOPES.map((scope) => (
            <label key={scope} class="check">
              <input type="checkbox" checked={scopes.includes(scope)} onChange={(e) => toggle(scope, e.currentTarget.checked)} />
              {scope}
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={scopes.length === 0}>
          Create key
        </button>
      </form>
      {created && (
        <div role="status" class="token">
          <p>
            Key <strong>{created.name}</strong> created. Its token is shown only this once: copy it now.
          </p>
          <label for="new-token">Token</label>
          <input id="new-token" readOnly value={created.token} onFocus={(e) => e.currentTarget.select()} />
          <button type="button" onClick={() => void copy()}>
            {copied ? 'Copied' : 'Copy'}
          </button>
        </div>
      )}
      <Notice text={notice} />
      <Problem text={problem} onRetry={actionProblem === undefined ? listing.retry : undefined} />
      <div class="table-scroll">
        {/* Cards on a narrow screen; the roles keep it a table for screen readers whatever the CSS does. */}
        <table class="cards" role="table" aria-label="Keys" aria-busy={listing.busy}>
          <thead role="rowgroup">
            <tr role="row">
              <th role="columnheader" scope="col">
                Name
              </th>
              <th role="columnheader" scope="col">
                Scopes
              </th>
              <th role="columnheader" scope="col">
                Created
              </th>
              <th role="columnheader" scope="col">
                Last used
              </th>
              <th role="columnheader" scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody role="rowgroup">
            {keys.map((key) => (
              <tr role="row" key={String(key.id)}>
                <td role="cell" data-label="Name">
                  <span>{key.name}</span>
                </td>
                <td role="cell" data-label="Scopes">
                  <span>{key.scopes.join(', ')}</span>
                </td>
                <td role="cell" data-label="Created">
                  <span>{when.format(Date.parse(key.createdAt))}</span>
                </td>
                <td role="cell" data-label="Last used">
                  <span>{key.lastUsedAt === null ? 'never' : when.format(Date.parse(key.lastUsedAt))}</span>
                </td>
                <td role="cell">
                  <div class="row-actions">
                    {key.id === session.key.id ? (
                      <span class="hint">this key</span>
                    ) : confirming === key.id ? (
                      <button type="button" aria-label={`Confirm revoking ${key.name}`} onClick={() => void revoke(key)}>
                        Confirm revoking
                      </button>
                    ) : (
                      <button type="button" aria-label={`Revoke ${key.name}`} onClick={() => setConfirming(key.id)}>
                        Revoke
                      </button>
                    )}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}
