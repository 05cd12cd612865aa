import { Problem, useRead } from '../parts.js'
import { api, type Session } from '../session.js'

const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })

/** Who still calls the deprecated pet lookup (admin), so they can be told before its sunset. */
export function DeprecationsPage({ session }: { session: Session }) {
  const listing = useRead(
    (signal) =>
      session.can('admin') ? api.deprecations.list({ signal }) : Promise.reject(new Error('This report needs a key with the admin scope.')),
    [],
  )
  const rows = listing.value

  return (
    <section aria-labelledby="deprecations-heading">
      <h2 id="deprecations-heading">Deprecations</h2>
      <p class="hint">
        Keys that still call the deprecated pet lookup (GET /v1/pets/&#123;petId&#125;), which answers 410 from its sunset date.
      </p>
      <Problem text={listing.problem} onRetry={listing.retry} />
      {rows?.length === 0 && <p>No key has called it.</p>}
      <div class="table-scroll">
        <table aria-label="Deprecations" aria-busy={listing.busy}>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Name</th>
              <th scope="col" class="num">
                Calls
              </th>
              <th scope="col">First call</th>
              <th scope="col">Last call</th>
            </tr>
          </thead>
          <tbody>
            {(rows ?? []).map((row) => (
              <tr key={String(row.keyId)}>
                <td class="id">{String(row.keyId)}</td>
                <td>{row.name}</td>
                <td class="num">{row.calls}</td>
                <td>{when.format(Date.parse(row.firstCall))}</td>
                <td>{when.format(Date.parse(row.lastCall))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}
