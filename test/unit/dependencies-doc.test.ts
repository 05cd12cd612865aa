import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'

const ROOT = new URL('../../../', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8')

describe('the list of runtime dependencies in docs/security.md', () => {
  test('When the docs are read, then they list every runtime dependency at the version package-lock.json installs, and nothing else', () => {
    const { dependencies } = JSON.parse(read('package.json')) as { dependencies: Record<string, string> }
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version: string }> }
    const installed = Object.fromEntries(Object.keys(dependencies).map((name) => [name, lock.packages[`node_modules/${name}`]?.version]))
    const doc = read('docs/security.md')
    const section = doc.slice(doc.indexOf('## Runtime dependencies'))
    const listed = Object.fromEntries([...section.matchAll(/^\| `([^`]+)` \| ([^ |]+) \|/gm)].map(([, name, version]) => [name, version]))
    assert.ok(Object.keys(installed).length > 10, 'the dependencies were read')
    assert.deepEqual(listed, installed)
  })
})
