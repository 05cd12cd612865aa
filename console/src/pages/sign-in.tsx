import type { ApiKey } from 'petstore-client'
import { useState } from 'preact/hooks'
import { describeProblem } from '../problems.js'
import { api, dropKey, keepKey } from '../session.js'
import { Problem } from '../parts.js'

export function SignIn(props: { problem: string | undefined; onSignedIn: (key: ApiKey) => void }) {
  const [token, setToken] = useState('')
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState(props.problem)

  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setProblem(undefined)
    keepKey(token.trim())
    try {
      props.onSignedIn(await api.keys.current({ maxRetries: 0 }))
    } catch (error) {
      dropKey()
      setProblem(describeProblem(error))
    } finally {
      setBusy(false)
    }
  }

  return (
    <main class="sign-in">
      <h1>Petstore console</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <Problem text={problem} />
      </form>
      <p class="hint">The key stays in this tab only, and is forgotten when you sign out or close it.</p>
    </main>
  )
}
