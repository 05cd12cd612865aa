// Issue 47: `petstore holds list|show|release`, the operator's view of holds, beside a running server
// on the same database: what the CLI shows is what the API shows, a release gives the units back as
// the API's does, and a refused one changes nothing.
import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, parseExact } from '../support/helpers.js'
import { importInventory, quantityOf } from '../support/ledger-client.js'

const BIG = 9007199254740993n
/** A body as raw JSON, petIds (bigint) written digit for digit. */
const raw = (body: unknown) => JSON.stringify(body, (_, v) => (typeof v === 'bigint' ? `@@${v}@@` : v)).replace(/"@@(-?\d+)@@"/g, '$1')

for (const backend of BACKENDS) {
  describe(`petstore holds beside a running server (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    const cli = (...args: string[]) => suite.server.cli(args)
    const ids: number[] = []
    const texts: string[] = []

    before(async () => {
      await importInventory(suite.server, [
        { petId: 1, quantity: 10 },
        { petId: BIG, quantity: 5 },
      ])
      for (const [body, action] of [
        [
          {
            lines: [
              { petId: 1, quantity: 2 },
              { petId: BIG, quantity: 1 },
            ],
            reference: 'cart\t1',
            expiresInSeconds: 600,
          },
          undefined,
        ],
        [{ lines: [{ petId: 1, quantity: 1 }], expiresInSeconds: 90 }, undefined],
        [{ lines: [{ petId: 1, quantity: 3 }] }, 'release'],
      ] as const) {
        const res = await suite.server.request('POST', '/v1/store/reservations', {
          token: suite.token,
          rawBody: raw(body),
          headers: { 'content-type': 'application/json' },
        })
        assert.equal(res.status, 201, res.text)
        ids.push(res.body.id)
        if (action)
          assert.equal(
            (await suite.server.request('POST', `/v1/store/reservations/${res.body.id}/${action}`, { token: suite.token })).status,
            200,
          )
        texts.push((await suite.server.request('GET', `/v1/store/reservations/${res.body.id}`, { token: suite.token })).text)
      }
    })

    test('When holds are listed, then a table by id with the time left of active ones; --json is the API list; --status filters', async () => {
      const table = await cli('holds', 'list')
      assert.equal(table.code, 0, table.stderr)
      const rows = table.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split('\t'))
      assert.deepEqual(rows[0], ['ID', 'STATUS', 'EXPIRES AT', 'LEFT', 'LINES', 'REFERENCE'])
      assert.deepEqual(
        rows.slice(1).map((r) => [r[0], r[1], r[4], r[5]]),
        [
          [String(ids[0]), 'active', `1x2 ${BIG}x1`, 'cart\\t1'],
          [String(ids[1]), 'active', '1x1', '-'],
          [String(ids[2]), 'released', '1x3', '-'],
        ],
      )
      assert.match(rows[1]![3]!, /^(9|10)m\d\ds$/)
      assert.match(rows[2]![3]!, /^(1m[23]\ds|[5-9]\ds)$/)
      assert.equal(rows[3]![3], '-')
      const json = await cli('holds', 'list', '--json')
      assert.equal(json.code, 0)
      assert.equal(json.stdout, `[${texts.join(',')}]\n`)
      const released = await cli('holds', 'list', '--status', 'released', '--json')
      assert.deepEqual(
        (parseExact(released.stdout) as { id: number }[]).map((r) => r.id),
        [ids[2]],
      )
      for (const bad of [
        ['--status', 'gone'],
        ['--limit', '0'],
        ['--limit', '1001'],
        ['--limit', '1.5'],
      ]) {
        const refused = await cli('holds', 'list', ...bad)
        assert.equal(refused.code, 2, bad.join(' '))
        assert.match(refused.stderr, /^holds list: --(status|limit) must be/)
      }
    })

    test('When one hold is shown, then it is the API representation; an unknown or malformed id is refused', async () => {
      const shown = await cli('holds', 'show', String(ids[0]))
      assert.equal(shown.code, 0, shown.stderr)
      assert.equal(shown.stdout, `${texts[0]}\n`)
      const unknown = await cli('holds', 'show', '424242')
      assert.equal(unknown.code, 1)
      assert.match(unknown.stderr, /^Error: No hold 424242\n/)
      const malformed = await cli('holds', 'show', '01')
      assert.equal(malformed.code, 2)
      assert.match(malformed.stderr, /^holds show: ID must be a decimal int64\n/)
    })

    test('When a hold is released from the CLI, then its units are back as the API shows, and a second release is refused, changing nothing', async () => {
      assert.equal(await quantityOf(suite.server, suite.token, 1), 7)
      const released = await cli('holds', 'release', String(ids[1]))
      assert.equal(released.code, 0, released.stderr)
      assert.equal(released.stdout, '')
      assert.equal(released.stderr, `Released hold ${ids[1]}: 1 of pet 1 back in stock.\n`)
      assert.equal(await quantityOf(suite.server, suite.token, 1), 8)
      const api = await suite.server.request('GET', `/v1/store/reservations/${ids[1]}`, { token: suite.token })
      assert.equal(api.body.status, 'released')
      const again = await cli('holds', 'release', String(ids[1]))
      assert.equal(again.code, 1)
      assert.match(again.stderr, /^Error: Hold \d+ was released: its units are back in stock\n/)
      assert.equal(await quantityOf(suite.server, suite.token, 1), 8)
    })
  })
}
