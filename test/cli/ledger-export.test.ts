// `petstore ledger export --before DATE FILE` (issue 25): the ledger's rows from before DATE as JSON
// lines, each exactly the feed's row, in seq order, into a new FILE; an existing file is refused and
// left as it was; a bad command line is a usage error. On both backends, beside a running service.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS } from '../support/helpers.js'
import { getChanges, importInventory } from '../support/ledger-client.js'

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const backend of BACKENDS) {
  describe(`petstore ledger export (${backend.name})`, () => {
    const suite = useAppSuite(backend)

    test('When the rows before a date are exported, then the file holds exactly those rows as the feed writes them, one a line, in seq order', async () => {
      await importInventory(
        suite.server,
        [1, 2, 3].map((petId) => ({ petId, quantity: 10 })),
      )
      await pause(5)
      const cut = new Date().toISOString()
      await pause(5)
      for (const quantity of [11, 12]) {
        assert.equal((await suite.server.request('PATCH', '/v1/inventory/1', { token: suite.token, body: { quantity } })).status, 200)
      }
      const feed = await getChanges(suite.server, suite.token, 'after=0&limit=100')
      // The feed's rows as text, each exactly as it is sent.
      const texts = feed.text.slice(1, -1).split(/,(?=\{"seq")/)
      assert.equal(texts.length, 5)

      const dir = mkdtempSync(join(tmpdir(), 'petstore-export-'))
      const file = join(dir, 'ledger.ndjson')
      const done = await suite.server.cli(['ledger', 'export', '--before', cut, file])
      assert.equal(done.code, 0, done.stderr)
      assert.equal(readFileSync(file, 'utf8'), `${texts.slice(0, 3).join('\n')}\n`)
      assert.match(done.stderr, /^Exported 3 ledger rows from before .* \(seqs \d+ to \d+\)\.\n$/)

      // An existing file is refused and left as it was.
      writeFileSync(file, 'keep me\n')
      const again = await suite.server.cli(['ledger', 'export', '--before', new Date().toISOString(), file])
      assert.equal(again.code, 1)
      assert.match(again.stderr, /exists already/)
      assert.equal(readFileSync(file, 'utf8'), 'keep me\n')

      // Everything before now: all five rows.
      const all = join(dir, 'all.ndjson')
      const whole = await suite.server.cli(['ledger', 'export', '--before', new Date(Date.now() + 1000).toISOString(), all])
      assert.equal(whole.code, 0, whole.stderr)
      assert.equal(readFileSync(all, 'utf8'), `${texts.join('\n')}\n`)
    })

    test('When the command line is wrong, then it is a usage error and no file is written', async () => {
      for (const args of [
        ['ledger', 'export', 'x.ndjson'],
        ['ledger', 'export', '--before', 'yesterday', 'x.ndjson'],
        ['ledger', 'export', '--before', '2026-01-01T00:00:00Z'],
      ]) {
        const res = await suite.server.cli(args)
        assert.equal(res.code, 2, args.join(' '))
        assert.match(res.stderr, /^ledger: use ledger export --before DATE FILE/)
      }
      // An unknown subcommand is named first (issue 49); the usage follows.
      const res = await suite.server.cli(['ledger', 'import', '--before', '2026-01-01T00:00:00Z', 'x.ndjson'])
      assert.equal(res.code, 2)
      assert.match(res.stderr, /^Unknown command 'import' for 'petstore ledger'\n/)
      assert.match(res.stderr, /Usage: petstore/)
    })
  })
}
