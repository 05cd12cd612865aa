import type { NewWebhook } from 'petstore-client'
import { useState } from 'preact/hooks'
import { Problem, useRead } from '../parts.js'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })
const at = (value: string | null) => (value === null ? '—' : when.format(Date.parse(value)))

/** Webhook subscriptions (admin): add one (its secret shown once), see how delivery stands, re-enable, remove. */
export function WebhooksPage({ session }: { session: Session }) {
  const listing = useRead(
    (signal) =>
      session.can('admin')
        ? api.webhooks.list({ signal })
        : Promise.reject(new Error('Managing webhooks needs a key with the admin scope.')),
    [],
  )
  const hooks = listing.value ?? []
  const [actionProblem, setProblem] = useState<string | undefined>()
  const problem = actionProblem ?? listing.problem
  const [url, setUrl] = useState('')
  const [description, setDescription] = useState('')
  const [created, setCreated] = useState<NewWebhook | undefined>()
  const [confirming, setConfirming] = useState<bigint | undefined>()

  /** Runs a change, then reads the list again; says what went wrong in words. */
  const act = async (work: () => Promise<unknown>) => {
    setProblem(undefined)
    setConfirming(undefined)
    try {
      await work()
      listing.reload()
    } catch (error) {
      setProblem(describeProblem(error))
    }
  }
  const add = (event: Event) => {
    event.preventDefault()
    void act(async () => {
      setCreated(await api.webhooks.create({ url: url.trim(), ...(description.trim() ? { description: description.trim() } : {}) }))
      setUrl('')
      setDescription('')
    })
  }

  return (
    <section aria-labelledby="webhooks-heading">
      <h2 id="webhooks-heading">Webhooks</h2>
      <form class="stack" onSubmit={add}>
        <label for="hook-url">URL</label>
        <input id="hook-url" type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
        <label for="hook-description">Description</label>
        <input id="hook-description" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        <button type="submit">Add webhook</button>
      </form>
      {created && (
        <div role="status" class="token">
          <p>
            Subscribed <strong>{created.url}</strong>. Its signing secret is shown only this once: keep it to verify messages.
          </p>
          <label for="new-secret">Secret</label>
          <input id="new-secret" readOnly value={created.secret} onFocus={(e) => e.currentTarget.select()} />
        </div>
      )}
      <Problem text={problem} />
      <div class="table-scroll">
        <table aria-label="Webhooks" aria-busy={listing.busy}>
          <thead>
            <tr>
              <th scope="col">URL</th>
              <th scope="col">State</th>
              <th scope="col">Delivered through</th>
              <th scope="col">Last success</th>
              <th scope="col">Why</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {hooks.map((hook) => (
              <tr key={String(hook.id)}>
                <td class="id">
                  {hook.url}
                  {hook.description && <div class="hint">{hook.description}</div>}
                </td>
                <td>{hook.state}</td>
                <td class="num">{String(hook.deliveredThrough)}</td>
                <td>{at(hook.lastSuccessAt)}</td>
                <td>{hook.disabledReason ?? hook.lastError ?? '—'}</td>
                <td>
                  <div class="row-actions">
                    {hook.state === 'disabled' && (
                      <button type="button" onClick={() => void act(() => api.webhooks.enable(hook.id))}>
                        Re-enable {hook.url}
                      </button>
                    )}
                    {confirming === hook.id ? (
                      <button type="button" onClick={() => void act(() => api.webhooks.remove(hook.id))}>
                        Confirm removing {hook.url}
                      </button>
                    ) : (
                      <button type="button" onClick={() => setConfirming(hook.id)}>
                        Remove {hook.url}
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
