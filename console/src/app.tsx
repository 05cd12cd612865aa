import type { ApiKey } from 'petstore-client'
import { useEffect, useState } from 'preact/hooks'
import { SignIn } from './pages/sign-in.js'
import { StockPage } from './pages/stock.js'
import { describeProblem } from './problems.js'
import { api, dropKey, type Session, sessionOf, storedKey } from './session.js'

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
  const route = useRoute()

  // A key kept from earlier in this tab: check it is still good.
  useEffect(() => {
    if (storedKey() === null) return
    api.keys
      .current()
      .then((key) => setSession(sessionOf(key)))
      .catch((error) => {
        dropKey()
        setProblem(describeProblem(error))
      })
      .finally(() => setChecking(false))
  }, [])

  const signOut = () => {
    dropKey()
    setSession(undefined)
    setProblem(undefined)
  }

  if (checking) return <p class="status">Checking the key…</p>
  if (session === undefined) return <SignIn problem={problem} onSignedIn={(key: ApiKey) => setSession(sessionOf(key))} />

  return (
    <div class="shell">
      <header class="bar">
        <h1>Petstore</h1>
        <nav aria-label="Main">
          <a href="#/stock" aria-current={route.startsWith('/stock') ? 'page' : undefined}>
            Stock
          </a>
        </nav>
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
      <main>{<StockPage session={session} />}</main>
    </div>
  )
}
