// Loaded with `node --import` (NODE_OPTIONS) into a server process by a test: appends the URL of
// every module the process resolves to the file RECORD_IMPORTS names, so a test can tell what was
// never loaded.
import { appendFileSync } from 'node:fs'
import { registerHooks } from 'node:module'

const file = process.env.RECORD_IMPORTS
if (file) {
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context)
      appendFileSync(file, `${resolved.url}\n`)
      return resolved
    },
  })
}
