// Changes pushed to the open pages: one change stream per signed-in tab (the API's, read with fetch
// so the key goes in a header), its rows handed to every page that listens. The client resumes
// after a drop from the last seq it saw, so a page misses nothing while the indicator says
// "disconnected".
import type { InventoryChange } from 'petstore-client'
import { useEffect, useRef, useState } from 'preact/hooks'
import { api } from './session.js'

type Listener = (change: InventoryChange) => void
const listeners = new Set<Listener>()

export type LiveState = 'connecting' | 'live' | 'disconnected' | 'off'

/** Follows the stream while `enabled` (a key that may read the inventory), and says how it stands. */
export function useLiveStream(enabled: boolean): LiveState {
  const [state, setState] = useState<LiveState>(enabled ? 'connecting' : 'off')
  useEffect(() => {
    if (!enabled) return
    const controller = new AbortController()
    void (async () => {
      try {
        const stream = api.changes.stream({
          signal: controller.signal,
          onConnection: (connection) => setState(connection === 'connected' ? 'live' : 'disconnected'),
        })
        for await (const change of stream) for (const listener of listeners) listener(change)
      } catch {
        // Not retried by the client: 401 (revoked), 403, too many streams. The pages still work.
        if (!controller.signal.aborted) setState('off')
      }
    })()
    return () => controller.abort()
  }, [enabled])
  return state
}

/** Calls `listener` with every change the stream brings while the component is mounted. */
export function useLiveChanges(listener: Listener): void {
  const current = useRef(listener)
  current.current = listener
  useEffect(() => {
    const forward: Listener = (change) => current.current(change)
    listeners.add(forward)
    return () => {
      listeners.delete(forward)
    }
  }, [])
}

export const LIVE_TEXT: Record<LiveState, string> = {
  connecting: 'Connecting to live changes…',
  live: 'Live',
  disconnected: 'Disconnected: reconnecting…',
  off: 'Live changes off',
}
