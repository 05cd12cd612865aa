// The signed-in key: kept in sessionStorage only (gone with the tab; never localStorage, never a
// URL), and the client every page uses, which reads it on each call.
import { type ApiKey, createClient, type PetstoreClient } from 'petstore-client'

const KEY = 'petstore.console.key'

export const storedKey = (): string | null => sessionStorage.getItem(KEY)
export const keepKey = (token: string) => sessionStorage.setItem(KEY, token)
export const dropKey = () => sessionStorage.removeItem(KEY)

export const api: PetstoreClient = createClient({
  baseUrl: `${location.origin}/v1`,
  token: () => storedKey() ?? '',
  timeoutMs: 15_000,
})

export interface Session {
  key: ApiKey
  can: (scope: ApiKey['scopes'][number]) => boolean
}

export const sessionOf = (key: ApiKey): Session => ({ key, can: (scope) => key.scopes.includes(scope) })
