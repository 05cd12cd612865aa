// Writes client/src/generated/openapi.ts from the committed openapi.json. Run it with
// `npm run client:types` after `npm run openapi`, and commit both: a test fails when they drift.
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { clientTypes } from './client-types.js'

// This file runs as dist/scripts/write-client-types.js: the repository root is two levels up.
const root = new URL('../../', import.meta.url)
const document = JSON.parse(readFileSync(new URL('openapi.json', root), 'utf8'))
const output = fileURLToPath(new URL('client/src/generated/openapi.ts', root))
writeFileSync(output, await clientTypes(document))
process.stderr.write(`Wrote ${output}\n`)
