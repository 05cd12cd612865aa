import type { ApiKey } from 'petstore-client'
import { useEffect, useRef, useState } from 'preact/hooks'
import { PetstoreError } from 'petstore-client'
import { focusHeading, useFocusRescue } from './focus.js'
import { Problem } from './parts.js'
import { SignIn } from './pages/sign-in.js'
import { ChangesPage } from './pages/changes.js'
import { DeprecationsPage } from './pages/deprecations.js'
import { HoldsPage } from './pages/holds.js'
import { KeysPage } from './pages/keys.js'
import { LocationsPage } from './pages/locations.js'
import { OrdersPage } from './pages/orders.js'
import { PetPage } from './pages/pet.js'
import { StockPage } from './pages/stock.js'
import { WebhooksPage } from './pages/webhooks.js'
import { LIVE_TEXT, useLiveStream } from './live.js'
import { describeProblem } from './problems.js'
import { api, dropKey, type Session, sessionOf, storedKey } from './session.js'

/** The pages in the navigation, in its order; `admin` ones are listed for admin keys only. */
const PAGES: { path: string; name: string; admin?: boolean }[] = [
  { path: '/stock', name: 'Stock' },
  { path: '/orders', name: 'Orders' },
  { path: '/holds', name: 'Holds' },
  { path: '/changes', name: 'Changes' },
  { path: '/locations', name: 'Locations' },
  { path: '/keys', name: 'Keys', admin: true },
  { path: '/webhooks', name: 'Webhooks', admin: true },
  { path: '/deprecations', name: 'Deprecations', admin: true },
]

/** The page a route shows (the Stock page for anything unknown). */
function pageFor(route: string, session: Session) {
  const pet = /^\/pets\/(-?\d{1,19})$/.exec(route)?.[1]
  // A pet id outside int64 is no pet: the Stock page instead.
  if (pet !== undefined && BigInt.asIntN(64, BigInt(pet)) === BigInt(pet)) return <PetPage session={session} petId={BigInt(pet)} />
  if (route.startsWith('/orders')) return <OrdersPage session={session} />
  if (route.startsWith('/holds')) return <HoldsPage session={session} />
  if (route.startsWith('/changes')) return <ChangesPage session={session} />
  if (route.startsWith('/locations')) return <LocationsPage session={session} />
  if (route.startsWith('/keys') && session.can('admin')) return <KeysPage session={session} />
  if (route.startsWith('/webhooks') && session.can('admin')) return <WebhooksPage session={session} />
  if (route.startsWith('/deprecations') && session.can('admin')) return <DeprecationsPage session={session} />
  return <StockPage session={session} />
}

/** The console's pages by the hash of the URL (no server routes: /console/ serves one page). */
function useRoute(): string {
  const [route, setRoute] = useState(location.hash.slice(1) || '/stock')
  useEffect(() => {
    const changed = () => setRoute(location.hash.slice(1) || '/stock')
    addEventListener('hashchange', changed)
    return () => removeEventListener('hashchange', changed)
  }, [])
  return route
}

export function App() {
  const [session, setSession] = useState<Session | undefined>()
  const [checking, setChecking] = useState(storedKey() !== null)
  const [problem, setProblem] = useState<string | undefined>()
  /** The kept key could not be checked (the service down, not a refusal): it is kept, to try again. */
  const [checkProblem, setCheckProblem] = useState<string | undefined>()
  const [checks, setChecks] = useState(0)
  const route = useRoute()
  const live = useLiveStream(session?.can('inventory:read') ?? false)
  const main = useRef<HTMLElement>(null)
  useFocusRescue(main, session !== undefined)

  // A key kept from earlier in this tab: check it is still good. Only a refusal (401) drops it.
  useEffect(() => {
    if (storedKey() === null) return
    setCheckProblem(undefined)
    api.keys
      .current()
      .then((key) => setSession(sessionOf(key)))
      .catch((error) => {
        if (error instanceof PetstoreError && error.status === 401) {
          dropKey()
          setProblem(describeProblem(error))
        } else setCheckProblem(describeProblem(error))
      })
      .finally(() => setChecking(false))
  }, [checks])

  // A page chosen in the navigation: focus on its heading (not on the first render).
  const shown = useRef(route)
  useEffect(() => {
    if (shown.current === route) return
    shown.current = route
    focusHeading(main.current)
  }, [route, session])

  const signOut = () => {
    dropKey()
    setSession(undefined)
    setProblem(undefined)
    setCheckProblem(undefined)
  }

  if (checkProblem !== undefined && session === undefined)
    return (
      <div class="sign-in">
        <h1>Petstore</h1>
        <p>The key kept in this tab could not be checked.</p>
        <Problem
          text={checkProblem}
          onRetry={() => {
            setChecking(true)
            setChecks((n) => n + 1)
          }}
        />
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </div>
    )
  if (checking) return <p class="status">Checking the key…</p>
  if (session === undefined) return <SignIn problem={problem} onSignedIn={(key: ApiKey) => setSession(sessionOf(key))} />

  return (
    <div class="shell">
      <header class="bar">
        <h1>Petstore</h1>
        <nav aria-label="Main">
          {PAGES.filter((page) => !page.admin || session.can('admin')).map((page) => (
            <a
              key={page.path}
              href={`#${page.path}`}
              aria-current={route.startsWith(page.path) ? 'page' : undefined}
              // The page already shown: no hash change follows, so focus goes to its heading here.
              onClick={() => route === page.path && focusHeading(main.current)}
            >
              {page.name}
            </a>
          ))}
        </nav>
        <span role="status" class={`live live-${live}`}>
          {LIVE_TEXT[live]}
        </span>
        <div class="who">
          <span>
            Signed in as <strong>{session.key.name}</strong>
          </span>
          <span class="scopes">{session.key.scopes.join(', ')}</span>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main ref={main}>{pageFor(route, session)}</main>
    </div>
  )
}
