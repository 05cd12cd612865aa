// Writes the OpenAPI document the service serves with its default configuration to openapi.json at
// the repository root. Run it with `npm run openapi` and commit the result: a test fails when the
// committed file and the served document drift apart.
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { SqliteStorage } from '../src/storage/sqlite/sqlite.storage.js'

// This file runs as dist/scripts/write-openapi.js: the repository root is two levels up.
const OUTPUT = fileURLToPath(new URL('../../openapi.json', import.meta.url))

const storage = SqliteStorage.open(':memory:')
try {
  const app = await buildApp(loadConfig({}), { storage, logger: false })
  try {
    await app.ready()
    writeFileSync(OUTPUT, `${JSON.stringify(app.swagger(), null, 2)}\n`)
    process.stderr.write(`Wrote ${OUTPUT}\n`)
  } finally {
    await app.close()
  }
} finally {
  await storage.close()
}
