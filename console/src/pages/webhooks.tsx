import type { NewWebhook } from 'petstore-client'
import { useState } from 'preact/hooks'
import { Notice, Problem, useRead } from '../parts.js'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })
const at = (value: string | null) => (value === null ? '—' : when.format(Date.parse(value)))
/** A subscription into a message broker: its messages are not signed, so it has no secret to show. */
const isBroker = (url: string) => /^(nats|amqps?):\/\//i.test(url)

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
  const [notice, setNotice] = useState<string | undefined>()

  /** Runs a change, then reads the list again; says what it did, or what went wrong, in words. */
  const act = async (work: () => Promise<unknown>, done?: string) => {
    setProblem(undefined)
    setNotice(undefined)
    setConfirming(undefined)
    try {
      await work()
      setNotice(done)
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
        <input
          id="hook-url"
          type="url"
          required
          aria-describedby="hook-url-hint"
          value={url}
          onInput={(e) => setUrl(e.currentTarget.value)}
        />
        <p id="hook-url-hint" class="hint">
          An https endpoint, or a message broker the operator allowed: <code>nats://HOST:PORT/SUBJECT_PREFIX</code> (JetStream) or{' '}
          <code>amqp://USER:PASSWORD@HOST:PORT/VHOST?exchange=NAME&amp;routingKey=KEY</code> (RabbitMQ). A password is never shown again.
        </p>
        <label for="hook-description">Description</label>
        <input id="hook-description" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        <button type="submit">Add webhook</button>
      </form>
      {created && isBroker(created.url) && (
        <div role="status">
          <p>
            Publishing into <strong>{created.url}</strong>: each stock change from now on, as the broker acknowledges it.
          </p>
        </div>
      )}
      {created && !isBroker(created.url) && (
        <div role="status" class="token">
          <p>
            Subscribed <strong>{created.url}</strong>. Its signing secret is shown only this once: keep it to verify messages.
          </p>
          <label for="new-secret">Secret</label>
          <input id="new-secret" readOnly value={created.secret} onFocus={(e) => e.currentTarget.select()} />
        </div>
      )}
      <Notice text={notice} />
      <Problem text={problem} onRetry={actionProblem === undefined ? listing.retry : undefined} />
      <div class="table-scroll">
        {/* Cards on a narrow screen; the roles keep it a table for screen readers whatever the CSS does. */}
        <table class="cards" role="table" aria-label="Webhooks" aria-busy={listing.busy}>
          <thead role="rowgroup">
            <tr role="row">
              {['URL', 'State', 'Delivered through', 'Last success', 'Why'].map((name) => (
                <th key={name} role="columnheader" scope="col">
                  {name}
                </th>
              ))}
              <th role="columnheader" scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody role="rowgroup">
            {hooks.map((hook) => (
              <tr role="row" key={String(hook.id)}>
                <td role="cell" data-label="URL" class="url">
                  <div>
                    {hook.url}
                    {hook.description && <div class="hint">{hook.description}</div>}
                  </div>
                </td>
                <td role="cell" data-label="State">
                  <span>{hook.state}</span>
                </td>
                <td role="cell" data-label="Delivered through" class="num">
                  <span>{String(hook.deliveredThrough)}</span>
                </td>
                <td role="cell" data-label="Last success">
                  <span>{at(hook.lastSuccessAt)}</span>
                </td>
                <td role="cell" data-label="Why">
                  <span>{hook.disabledReason ?? hook.lastError ?? '—'}</span>
                </td>
                <td role="cell">
                  <div class="row-actions">
                    {hook.state === 'disabled' && (
                      <button
                        type="button"
                        aria-label={`Re-enable ${hook.url}`}
                        onClick={() => void act(() => api.webhooks.enable(hook.id), `Webhook ${hook.url} re-enabled.`)}
                      >
                        Re-enable
                      </button>
                    )}
                    {confirming === hook.id ? (
                      <button
                        type="button"
                        aria-label={`Confirm removing ${hook.url}`}
                        onClick={() => void act(() => api.webhooks.remove(hook.id), `Webhook ${hook.url} removed.`)}
                      >
                        Confirm removing
                      </button>
                    ) : (
                      <button type="button" aria-label={`Remove ${hook.url}`} onClick={() => setConfirming(hook.id)}>
                        Remove
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
