// Issue 50: the operator's CLI for locations (`petstore locations list|add|rename|deactivate|activate|stock`,
// `petstore stock`, `petstore transfer`, `petstore adjust --location`, and a batch's locationId and
// transfers), beside a running server on the same database: what the CLI prints is what the API
// answers, what it applies is what the API then shows, and a refused command changes nothing.
import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, type CliResult, parseExact, runCli, runCliInProcess } from '../support/helpers.js'
import { importInventory, quantityOf, readAllChanges } from '../support/ledger-client.js'

const BIG = 9007199254740993n
const NEGATIVE = -7n
const MAX_QUANTITY = 2147483647
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

interface Location {
  id: number
  name: string
  active: boolean
  createdAt: string
  updatedAt: string
}

/** A table's lines as cells, the header first. */
const rowsOf = (stdout: string) =>
  stdout
    .trimEnd()
    .split('\n')
    .map((l) => l.split('\t'))

for (const backend of BACKENDS) {
  describe(`petstore locations, stock and transfer beside a running server (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    const cli = (...args: string[]) => suite.server.cli(args)
    /** An API answer's text, after checking it is a 200. */
    const api = async (path: string) => {
      const res = await suite.server.request('GET', path, { token: suite.token })
      assert.equal(res.status, 200, `${path}: ${res.text}`)
      return res.text
    }
    /** The locations as the API lists them. */
    const locations = async () => parseExact(await api('/v1/locations')) as Location[]
    /** One pet's stock at each location, as the API answers it: {locationId: quantity}. */
    /** The id of the location added last by the suite, empty throughout (PostgreSQL's ids may skip a number a refused add took). */
    let empty = 0
    const levels = async (petId: bigint | number) =>
      Object.fromEntries(
        (parseExact(await api(`/v1/inventory/${petId}/locations`)) as { locationId: number; quantity: number }[]).map((l) => [
          l.locationId,
          l.quantity,
        ]),
      )

    before(async () => {
      await importInventory(suite.server, [
        { petId: 1, quantity: 10 },
        { petId: 2, quantity: 3, status: 'pending' },
        { petId: 3, quantity: 0, status: 'sold' },
        { petId: BIG, quantity: 20 },
        { petId: NEGATIVE, quantity: 4 },
      ])
    })

    /** What a refused command must leave as it was: the locations, every entry, the stock at each location, and the ledger. */
    async function state() {
      const ids = (await locations()).map((l) => l.id)
      return {
        locations: await api('/v1/locations'),
        inventory: await api('/v1/inventory?limit=1000'),
        stock: await Promise.all(ids.map((id) => api(`/v1/locations/${id}/inventory?limit=1000`))),
        ledger: await readAllChanges(suite.server, suite.token),
      }
    }

    /** Runs a command line that must be refused with `code`, nothing on stdout, and `first` as its stderr's first line. */
    async function refused(run: () => Promise<CliResult>, code: number, first: string | RegExp) {
      const was = await state()
      const result = await run()
      const firstLine = result.stderr.split('\n')[0]!
      assert.equal(result.code, code, result.stderr)
      assert.equal(result.stdout, '')
      if (typeof first === 'string') assert.equal(firstLine, first)
      else assert.match(firstLine, first)
      if (code === 2) assert.match(result.stderr, /\n\nUsage: petstore <command>/, 'the usage follows')
      else assert.doesNotMatch(result.stderr, /Usage:/)
      assert.deepEqual(await state(), was, 'nothing changed')
      return result
    }

    /** Runs a command line that must succeed with nothing on stderr; its stdout. */
    async function succeeds(...args: string[]): Promise<string> {
      const result = await cli(...args)
      assert.equal(result.code, 0, result.stderr)
      assert.equal(result.stderr, '')
      return result.stdout
    }

    describe('locations list and add', () => {
      test('When the store has its default location only, then list shows it as a table, and --json is the API list exactly', async () => {
        const [only] = await locations()
        assert.deepEqual(rowsOf(await succeeds('locations', 'list')), [
          ['ID', 'NAME', 'ACTIVE', 'CREATED'],
          ['1', 'Default', 'yes', only!.createdAt],
        ])
        const json = await succeeds('locations', 'list', '--json')
        assert.equal(json, `${await api('/v1/locations')}\n`)
        assert.deepEqual(parseExact(json), [only])
      })

      test('When a location is added, then it is printed as the API shows it, active, and listed after the default one', async () => {
        const out = await succeeds('locations', 'add', 'Harbour Street')
        const added = parseExact(out) as Location
        assert.deepEqual(Object.keys(added), ['id', 'name', 'active', 'createdAt', 'updatedAt'])
        assert.deepEqual([added.id, added.name, added.active], [2, 'Harbour Street', true])
        assert.match(added.createdAt, TIME)
        assert.equal(added.updatedAt, added.createdAt)
        assert.equal(out, `${await api('/v1/locations/2')}\n`)
        // A name outside ASCII is kept exactly.
        const quay = parseExact(await succeeds('locations', 'add', 'Quai d’Orsay 🐕')) as Location
        assert.deepEqual([quay.id, quay.name, quay.active], [3, 'Quai d’Orsay 🐕', true])
        assert.deepEqual(
          rowsOf(await succeeds('locations', 'list')).map((r) => r.slice(0, 3)),
          [
            ['ID', 'NAME', 'ACTIVE'],
            ['1', 'Default', 'yes'],
            ['2', 'Harbour Street', 'yes'],
            ['3', 'Quai d’Orsay 🐕', 'yes'],
          ],
        )
        assert.equal(await succeeds('locations', 'list', '--json'), `${await api('/v1/locations')}\n`)
      })

      test('When the name is taken (case aside) or not a name, then it is refused naming it, and nothing is created', async () => {
        await refused(() => cli('locations', 'add', 'HARBOUR street'), 1, 'Error: A location named "HARBOUR street" already exists')
        await refused(() => cli('locations', 'add', 'default'), 1, 'Error: A location named "default" already exists')
        for (const name of ['', '   ', 'x'.repeat(101), 'tab\there', 'line\nbreak']) {
          await refused(
            () => cli('locations', 'add', name),
            2,
            /^locations add: NAME must be 1 to 100 characters, not only spaces, no control characters \(got ".*"\)$/,
          )
        }
        await refused(() => cli('locations', 'add'), 2, /^locations: use locations list \[--json\] \| locations add NAME/)
        await refused(() => cli('locations', 'add', 'A', 'B'), 2, "Unexpected argument 'B' for 'petstore locations add'")
        await refused(() => cli('locations', 'list', '--bogus'), 2, "Unknown option '--bogus' for 'petstore locations list'")
        await refused(() => cli('locations', 'frob'), 2, "Unknown command 'frob' for 'petstore locations'")
        await refused(() => cli('locations'), 2, /^locations: use locations list/)
        // 100 characters is the limit, not past it.
        const hundred = parseExact(await succeeds('locations', 'add', 'y'.repeat(100))) as Location
        assert.equal(hundred.name, 'y'.repeat(100))
        empty = hundred.id
      })
    })

    describe('transfer and stock', () => {
      test('When units are transferred, then the answer is the API’s, the pet’s quantity in all is unchanged, and two ledger rows share the transfer id', async () => {
        const from = (await readAllChanges(suite.server, suite.token)).at(-1)!.seq
        const out = await succeeds('transfer', '1', '4', '--from', '1', '--to', '2', '--note', 'van 2 ü')
        const answer = parseExact(out) as Record<string, unknown>
        assert.deepEqual(Object.keys(answer), ['petId', 'locationId', 'quantity', 'status', 'transferId', 'from'])
        assert.match(answer.transferId as string, UUID)
        assert.deepEqual(answer, {
          petId: 1n,
          locationId: 2,
          quantity: 4,
          status: 'available',
          transferId: answer.transferId,
          from: { locationId: 1, quantity: 6 },
        })
        assert.equal(
          out,
          `{"petId":1,"locationId":2,"quantity":4,"status":"available","transferId":"${answer.transferId}","from":{"locationId":1,"quantity":6}}\n`,
        )
        assert.equal(await quantityOf(suite.server, suite.token, 1), 10)
        assert.deepEqual(await levels(1), { 1: 6, 2: 4 })
        const rows = await readAllChanges(suite.server, suite.token, { after: from })
        assert.deepEqual(
          rows.map((r) => [r.petId, r.reason, r.previousQuantity, r.quantity, r.note, r.keyId, r.requestId, r.locationId, r.transferId]),
          [
            [1n, 'transfer', 10, 6, 'van 2 ü', null, null, undefined, answer.transferId],
            [1n, 'transfer', 0, 4, 'van 2 ü', null, null, 2, answer.transferId],
          ],
        )
        // A petId beyond 2^53 and a negative one are read exactly; options may come first.
        const big = parseExact(await succeeds('transfer', '--to', '3', '--from', '1', String(BIG), '5')) as Record<string, unknown>
        assert.deepEqual([big.petId, big.locationId, big.quantity, big.from], [BIG, 3, 5, { locationId: 1, quantity: 15 }])
        const negative = parseExact(await succeeds('transfer', String(NEGATIVE), '4', '--from', '1', '--to', '2')) as Record<
          string,
          unknown
        >
        assert.deepEqual([negative.petId, negative.quantity, negative.from], [NEGATIVE, 4, { locationId: 1, quantity: 0 }])
      })

      test('When a pet’s history holds transfers, then the table shows each row’s location and transfer id; a pet of one location shows it as before', async () => {
        const rows = rowsOf(await succeeds('history', '1', '--limit', '2'))
        assert.deepEqual(rows[0], ['SEQ', 'AT', 'REASON', 'LOCATION', 'FROM', 'TO', 'ORDER', 'BATCH', 'TRANSFER', 'KEY', 'REQUEST', 'NOTE'])
        const [into, outOf] = rows.slice(1)
        assert.deepEqual([into![2], into![3], into![4], into![5]], ['transfer', '2', '0', '4'])
        assert.deepEqual([outOf![2], outOf![3], outOf![4], outOf![5]], ['transfer', '1', '10', '6'])
        assert.equal(into![8], outOf![8], 'both rows name the one transfer')
        assert.match(into![8]!, /^[0-9a-f]{8}$/)
        const plain = rowsOf(await succeeds('history', '3', '--limit', '1'))
        assert.deepEqual(plain[0], ['SEQ', 'AT', 'REASON', 'FROM', 'TO', 'ORDER', 'BATCH', 'KEY', 'REQUEST', 'NOTE'])
      })

      test('When one pet’s stock is asked for, then a table of each location with its name and the total last, or the API’s JSON', async () => {
        assert.deepEqual(rowsOf(await succeeds('stock', '1')), [
          ['LOCATION', 'NAME', 'QUANTITY'],
          ['1', 'Default', '6'],
          ['2', 'Harbour Street', '4'],
          ['TOTAL', '-', '10'],
        ])
        assert.deepEqual(rowsOf(await succeeds('stock', String(BIG))), [
          ['LOCATION', 'NAME', 'QUANTITY'],
          ['1', 'Default', '15'],
          ['3', 'Quai d’Orsay 🐕', '5'],
          ['TOTAL', '-', '20'],
        ])
        // A pet stocked at the default location only: that one line.
        assert.deepEqual(rowsOf(await succeeds('stock', '2')), [
          ['LOCATION', 'NAME', 'QUANTITY'],
          ['1', 'Default', '3'],
          ['TOTAL', '-', '3'],
        ])
        const json = await succeeds('stock', String(BIG), '--json')
        assert.equal(json, `${await api(`/v1/inventory/${BIG}/locations`)}\n`)
        assert.deepEqual(parseExact(json), [
          { petId: BIG, locationId: 1, quantity: 15, status: 'available' },
          { petId: BIG, locationId: 3, quantity: 5, status: 'available' },
        ])
        assert.equal(await succeeds('stock', '--json', String(NEGATIVE)), `${await api(`/v1/inventory/${NEGATIVE}/locations`)}\n`)
        await refused(() => cli('stock', '424242'), 1, 'Error: No inventory entry for pet 424242')
        await refused(() => cli('stock', 'x'), 2, 'stock: PETID must be a decimal int64 (got "x")')
        await refused(() => cli('stock', '9223372036854775808'), 2, 'stock: PETID must be a decimal int64 (got "9223372036854775808")')
        await refused(() => cli('stock'), 2, 'stock: use stock PETID [--json], PETID a decimal int64')
        await refused(() => cli('stock', '1', '2'), 2, "Unexpected argument '2' for 'petstore stock'")
        await refused(() => cli('stock', '1', '--limit', '2'), 2, "Unknown option '--limit' for 'petstore stock'")
      })

      test('When a transfer cannot apply (the same location twice, 0 units, an unknown location, more than the source holds), then it is refused, and nothing moves', async () => {
        // Pet 1: 6 at the default location, 4 at Harbour Street (2).
        await refused(
          () => cli('transfer', '1', '1', '--from', '2', '--to', '2'),
          2,
          'transfer: --to must be another location than --from (both are 2)',
        )
        await refused(
          () => cli('transfer', '1', '0', '--from', '1', '--to', '2'),
          2,
          'transfer: QUANTITY must be an integer from 1 to 2147483647 (got "0")',
        )
        for (const quantity of ['-1', '1.5', '2147483648', '05', 'many']) {
          await refused(
            () => cli('transfer', '1', quantity, '--from', '1', '--to', '2'),
            2,
            `transfer: QUANTITY must be an integer from 1 to ${MAX_QUANTITY} (got "${quantity}")`,
          )
        }
        await refused(
          () => cli('transfer', '1', '5', '--from', '2', '--to', '1'),
          1,
          'Error: Pet 1 has 4 in stock at location 2; moving 5 to location 1 would take it below zero',
        )
        await refused(
          () => cli('transfer', '3', '1', '--from', '1', '--to', '2'),
          1,
          'Error: Pet 3 has 0 in stock at location 1; moving 1 to location 2 would take it below zero',
        )
        await refused(() => cli('transfer', '1', '1', '--from', '1', '--to', '99'), 1, 'Error: No location 99')
        await refused(() => cli('transfer', '1', '1', '--from', '99', '--to', '1'), 1, 'Error: No location 99')
        await refused(() => cli('transfer', '1', '1', '--from', '1', '--to', '99999999999999'), 1, 'Error: No location 99999999999999')
        await refused(() => cli('transfer', '1', '1', '--from', '1', '--to', '0'), 1, 'Error: No location 0')
        await refused(() => cli('transfer', '1', '1', '--from', 'x', '--to', '2'), 2, 'transfer: --from must be a decimal int64 (got "x")')
        await refused(
          () => cli('transfer', '1', '1', '--from', '1', '--to', '99999999999999999999'),
          2,
          'transfer: --to must be a decimal int64 (got "99999999999999999999")',
        )
        await refused(() => cli('transfer', '424242', '1', '--from', '1', '--to', '2'), 1, 'Error: No inventory entry for pet 424242')
        await refused(() => cli('transfer', 'x', '1', '--from', '1', '--to', '2'), 2, 'transfer: PETID must be a decimal int64 (got "x")')
        await refused(
          () => cli('transfer', '1', '1', '--from', '1', '--to', '2', '--note', 'n'.repeat(501)),
          2,
          'transfer: --note must NOT have more than 500 characters',
        )
        const usage = /^transfer: use transfer PETID QUANTITY --from ID --to ID \[--note TEXT\]/
        await refused(() => cli('transfer', '1', '1', '--from', '1'), 2, usage)
        await refused(() => cli('transfer', '1', '--from', '1', '--to', '2'), 2, usage)
        await refused(
          () => cli('transfer', '1', '1', '2', '--from', '1', '--to', '2'),
          2,
          "Unexpected argument '2' for 'petstore transfer'",
        )
        await refused(
          () => cli('transfer', '1', '1', '--from', '1', '--to', '2', '--bogus'),
          2,
          "Unknown option '--bogus' for 'petstore transfer'",
        )
        // As a process too: the same exit code and message, and still nothing moved.
        await refused(
          () => runCli(['transfer', '1', '7', '--from', '1', '--to', '2'], suite.server.env),
          1,
          'Error: Pet 1 has 6 in stock at location 1; moving 7 to location 2 would take it below zero',
        )
        assert.deepEqual(await levels(1), { 1: 6, 2: 4 })
      })
    })

    describe('adjust --location and batch', () => {
      test('When adjust names a location, then the units move there and the answer is that location’s stock, as the API answers', async () => {
        const from = (await readAllChanges(suite.server, suite.token)).at(-1)!.seq
        assert.equal(
          await succeeds('adjust', '1', '3', '--location', '2', '--reason', 'arrival'),
          '{"petId":1,"locationId":2,"quantity":7,"status":"available"}\n',
        )
        assert.equal(
          await succeeds('adjust', '--location', '2', '1', '-2'),
          '{"petId":1,"locationId":2,"quantity":5,"status":"available"}\n',
        )
        // Without --location: the default location, answering the pet's entry (its quantity in all).
        assert.equal(await succeeds('adjust', '1', '1'), '{"petId":1,"quantity":12,"status":"available"}\n')
        assert.deepEqual(await levels(1), { 1: 7, 2: 5 })
        const rows = await readAllChanges(suite.server, suite.token, { after: from })
        assert.deepEqual(
          rows.map((r) => [r.reason, r.previousQuantity, r.quantity, r.locationId]),
          [
            ['arrival', 4, 7, 2],
            ['adjustment', 7, 5, 2],
            ['adjustment', 6, 7, undefined],
          ],
        )
      })

      test('When adjust names a location it cannot apply at, then it is refused, and nothing changes', async () => {
        await refused(() => cli('adjust', '1', '1', '--location', '99'), 1, 'Error: No location 99')
        await refused(() => cli('adjust', '1', '1', '--location', '99999999999999'), 1, 'Error: No location 99999999999999')
        await refused(
          () => cli('adjust', '1', '-6', '--location', '2'),
          1,
          'Error: Pet 1 has 5 in stock at location 2; removing 6 would take it below zero',
        )
        await refused(() => cli('adjust', '1', '1', '--location', 'x'), 2, 'adjust: --location must be a decimal int64 (got "x")')
        await refused(() => cli('adjust', '1', '0', '--location', '2'), 2, /^adjust: DELTA must be a non-zero int32/)
      })

      test('When a batch holds changes at a location and a transfer, then they apply together and each entry is printed as the API answers it', async () => {
        const { env } = suite.server
        const result = await runCli(
          ['batch', '-'],
          env,
          [
            '{"petId":1,"delta":2,"locationId":2,"reason":"return"}',
            '{"petId":1,"fromLocationId":2,"toLocationId":1,"quantity":3,"note":"back"}',
            `{"petId":${BIG},"quantity":1,"locationId":3,"reason":"count"}`,
            '{"petId":2,"delta":1}',
          ].join('\n'),
        )
        assert.equal(result.code, 0, result.stderr)
        assert.equal(result.stderr, '')
        const out = parseExact(result.stdout) as { batchId: string; entries: Record<string, unknown>[] }
        assert.match(out.batchId, UUID)
        const transferId = out.entries[1]!.transferId
        assert.match(transferId as string, UUID)
        assert.deepEqual(out.entries, [
          { petId: 1n, locationId: 2, quantity: 7, status: 'available' },
          { petId: 1n, locationId: 1, quantity: 10, status: 'available', transferId, from: { locationId: 2, quantity: 4 } },
          { petId: BIG, locationId: 3, quantity: 1, status: 'available' },
          { petId: 2n, quantity: 4, status: 'pending' },
        ])
        assert.deepEqual(await levels(1), { 1: 10, 2: 4 })
        assert.deepEqual(await levels(BIG), { 1: 15, 3: 1 })
        // A transfer that cannot apply refuses the whole batch.
        await refused(
          () => runCli(['batch', '-'], env, '[{"petId":1,"delta":1},{"petId":1,"fromLocationId":2,"toLocationId":1,"quantity":5}]'),
          1,
          'Error: changes[1]: pet 1 has 4 in stock at location 2; moving 5 to location 1 would take it below zero',
        )
        await refused(
          () => runCli(['batch', '-'], env, '[{"petId":1,"fromLocationId":2,"toLocationId":2,"quantity":1}]'),
          1,
          'Error: changes[0].toLocationId must be another location than fromLocationId',
        )
        await refused(
          () => runCli(['batch', '-'], env, '[{"petId":1,"fromLocationId":2,"toLocationId":1,"quantity":0}]'),
          1,
          'Error: changes[0].quantity of a transfer must be 1 or more',
        )
        await refused(() => runCli(['batch', '-'], env, '[{"petId":1,"delta":1,"locationId":99}]'), 1, 'Error: changes[0]: No location 99')
      })
    })

    describe('locations stock', () => {
      test('When one location’s stock is listed, then a table by petId, or the API’s page exactly; a full page says how to read the next', async () => {
        // The default location holds every entry: -7 (0), 1 (10), 2 (4), 3 (0), BIG (15).
        const all = await cli('locations', 'stock', '1')
        assert.equal(all.code, 0, all.stderr)
        assert.equal(all.stderr, '')
        assert.deepEqual(rowsOf(all.stdout), [
          ['PETID', 'QUANTITY', 'STATUS'],
          [String(NEGATIVE), '0', 'available'],
          ['1', '10', 'available'],
          ['2', '4', 'pending'],
          ['3', '0', 'sold'],
          [String(BIG), '15', 'available'],
        ])
        const first = await cli('locations', 'stock', '1', '--limit', '2')
        assert.equal(first.code, 0, first.stderr)
        assert.deepEqual(rowsOf(first.stdout).slice(1), [
          [String(NEGATIVE), '0', 'available'],
          ['1', '10', 'available'],
        ])
        assert.equal(first.stderr, 'More stock after pet 1: petstore locations stock 1 --after 1 --limit 2\n')
        const second = await cli('locations', 'stock', '1', '--after', '1', '--limit', '2', '--json')
        assert.equal(second.code, 0, second.stderr)
        assert.equal(second.stdout, `${await api('/v1/locations/1/inventory?after=1&limit=2')}\n`)
        assert.deepEqual(parseExact(second.stdout), [
          { petId: 2n, locationId: 1, quantity: 4, status: 'pending' },
          { petId: 3n, locationId: 1, quantity: 0, status: 'sold' },
        ])
        assert.equal(second.stderr, 'More stock after pet 3: petstore locations stock 1 --after 3 --limit 2 --json\n')
        const last = await cli('locations', 'stock', '1', '--after', '3', '--limit', '2', '--json')
        assert.equal(last.stdout, `${await api('/v1/locations/1/inventory?after=3&limit=2')}\n`)
        assert.equal(last.stderr, '', 'the last page says nothing more')
        // A negative petId as the cursor: the next page's command joins it to its option.
        const negative = await cli('locations', 'stock', '1', '--limit', '1')
        assert.equal(negative.stderr, `More stock after pet ${NEGATIVE}: petstore locations stock 1 --after=${NEGATIVE} --limit 1\n`)
        const afterNegative = await cli('locations', 'stock', '1', `--after=${NEGATIVE}`, '--limit', '1', '--json')
        assert.equal(afterNegative.stdout, `${await api(`/v1/locations/1/inventory?after=${NEGATIVE}&limit=1`)}\n`)
        // Another location: the pets stocked there; --status filters as the API does.
        assert.deepEqual(rowsOf(await succeeds('locations', 'stock', '2')), [
          ['PETID', 'QUANTITY', 'STATUS'],
          [String(NEGATIVE), '4', 'available'],
          ['1', '4', 'available'],
        ])
        assert.equal(await succeeds('locations', 'stock', '2', '--json'), `${await api('/v1/locations/2/inventory')}\n`)
        assert.equal(
          await succeeds('locations', 'stock', '1', '--status', 'pending', '--json'),
          '[{"petId":2,"locationId":1,"quantity":4,"status":"pending"}]\n',
        )
        assert.deepEqual(rowsOf(await succeeds('locations', 'stock', String(empty))), [['PETID', 'QUANTITY', 'STATUS']])
        assert.equal(await succeeds('locations', 'stock', String(empty), '--json'), '[]\n')
      })

      test('When the location or an option is not one, then it is refused naming it', async () => {
        await refused(() => cli('locations', 'stock', '99'), 1, 'Error: No location 99')
        await refused(() => cli('locations', 'stock', '99999999999999'), 1, 'Error: No location 99999999999999')
        await refused(() => cli('locations', 'stock', 'x'), 2, 'locations stock: ID must be a decimal int64 (got "x")')
        await refused(() => cli('locations', 'stock', '01'), 2, 'locations stock: ID must be a decimal int64 (got "01")')
        for (const limit of ['0', '1001', '1.5', 'x']) {
          await refused(
            () => cli('locations', 'stock', '1', '--limit', limit),
            2,
            `locations stock: --limit must be an integer from 1 to 1000 (got "${limit}")`,
          )
        }
        await refused(
          () => cli('locations', 'stock', '1', '--status', 'gone'),
          2,
          'locations stock: --status must be one of: available, pending, sold (got "gone")',
        )
        await refused(
          () => cli('locations', 'stock', '1', '--after', 'x'),
          2,
          'locations stock: --after must be a decimal int64, the last PETID of the page before (got "x")',
        )
        await refused(() => cli('locations', 'stock'), 2, /^locations: use locations list/)
        await refused(() => cli('locations', 'stock', '1', '2'), 2, "Unexpected argument '2' for 'petstore locations stock'")
      })
    })

    describe('locations rename, deactivate and activate', () => {
      test('When a location is renamed, then it is printed as the API shows it; a taken or bad name and a bad id are refused', async () => {
        const out = await succeeds('locations', 'rename', '2', 'Harbour St. (north)')
        const renamed = parseExact(out) as Location
        assert.deepEqual([renamed.id, renamed.name, renamed.active], [2, 'Harbour St. (north)', true])
        assert.equal(out, `${await api('/v1/locations/2')}\n`)
        assert.ok(renamed.updatedAt >= renamed.createdAt)
        // The default location may be renamed too.
        assert.equal((parseExact(await succeeds('locations', 'rename', '1', 'Main store')) as Location).name, 'Main store')
        await refused(() => cli('locations', 'rename', '3', 'MAIN STORE'), 1, 'Error: A location named "MAIN STORE" already exists')
        await refused(() => cli('locations', 'rename', '3', ' '), 2, /^locations rename: NAME must be 1 to 100 characters/)
        await refused(() => cli('locations', 'rename', '3', 'z'.repeat(101)), 2, /^locations rename: NAME must be 1 to 100 characters/)
        await refused(() => cli('locations', 'rename', '99', 'Nowhere'), 1, 'Error: No location 99')
        await refused(() => cli('locations', 'rename', '99999999999999', 'Nowhere'), 1, 'Error: No location 99999999999999')
        await refused(() => cli('locations', 'rename', 'x', 'Nowhere'), 2, 'locations rename: ID must be a decimal int64 (got "x")')
        await refused(() => cli('locations', 'rename', '2'), 2, /^locations: use locations list/)
      })

      test('When a location holding stock is deactivated, then it is refused with how much it holds; the default one never; an empty one is, and takes no stock until activated', async () => {
        // Harbour Street (2) holds 4 of pet -7 and 4 of pet 1.
        await refused(
          () => cli('locations', 'deactivate', '2'),
          1,
          'Error: Location 2 holds 8 units of 2 pets; move or remove them before deactivating it',
        )
        await refused(() => cli('locations', 'deactivate', '1'), 1, 'Error: The default location cannot be deactivated')
        await refused(() => cli('locations', 'deactivate', '99999999999999'), 1, 'Error: No location 99999999999999')
        await refused(() => cli('locations', 'deactivate', 'x'), 2, 'locations deactivate: ID must be a decimal int64 (got "x")')
        await refused(() => cli('locations', 'activate', '99'), 1, 'Error: No location 99')
        await refused(() => cli('locations', 'deactivate', '2', '--json'), 2, "Unknown option '--json' for 'petstore locations deactivate'")
        // The last one added holds nothing.
        const out = await succeeds('locations', 'deactivate', String(empty))
        assert.equal(out, `${await api(`/v1/locations/${empty}`)}\n`)
        assert.equal((parseExact(out) as Location).active, false)
        assert.deepEqual(
          rowsOf(await succeeds('locations', 'list')).map((r) => [r[0], r[2]]),
          [
            ['ID', 'ACTIVE'],
            ['1', 'yes'],
            ['2', 'yes'],
            ['3', 'yes'],
            [String(empty), 'no'],
          ],
        )
        await refused(
          () => cli('transfer', '1', '1', '--from', '1', '--to', String(empty)),
          1,
          `Error: Location ${empty} is inactive: it takes no stock until it is activated again`,
        )
        await refused(
          () => cli('adjust', '1', '1', '--location', String(empty)),
          1,
          `Error: Location ${empty} is inactive: it takes no stock until it is activated again`,
        )
        const activated = await succeeds('locations', 'activate', String(empty))
        assert.equal(activated, `${await api(`/v1/locations/${empty}`)}\n`)
        assert.equal((parseExact(activated) as Location).active, true)
        const moved = parseExact(await succeeds('transfer', '1', '1', '--from', '1', '--to', String(empty))) as Record<string, unknown>
        assert.deepEqual(moved, {
          petId: 1n,
          locationId: empty,
          quantity: 1,
          status: 'available',
          transferId: moved.transferId,
          from: { locationId: 1, quantity: 9 },
        })
        assert.deepEqual(await levels(1), { 1: 9, 2: 4, [empty]: 1 })
      })
    })
  })
}

describe('petstore usage lists the locations commands', () => {
  test('When help is asked for, then locations, stock and transfer are among the commands, and adjust names --location', async () => {
    const result = await runCliInProcess(['help'], {})
    assert.equal(result.code, 0)
    for (const line of [
      /\n {2}transfer PETID QUANTITY --from ID --to ID \[--note TEXT\]\n/,
      /\n {2}stock PETID \[--json\] {2,}one pet's stock at each location/,
      /\n {2}locations list \[--json\] {2,}\S/,
      /\n {2}locations add NAME {2,}\S/,
      /\n {2}locations rename ID NAME {2,}\S/,
      /\n {2}locations deactivate ID {2,}\S/,
      /\n {2}locations activate ID {2,}\S/,
      /\n {2}locations stock ID \[--status S\] \[--limit N\] \[--after PETID\] \[--json\]\n/,
      /\n {2}adjust PETID DELTA \[--reason R\] \[--note TEXT\]\n {6}\[--location ID\] {2,}\S/,
      /\[, locationId\]/,
      /transfer \{petId, fromLocationId, toLocationId, quantity \[, note\]\}/,
    ]) {
      assert.match(result.stdout, line)
    }
    const commands = result.stdout.slice(0, result.stdout.indexOf('\nScopes:'))
    for (const text of commands.split('\n')) assert.ok(text.length <= 124, `a usage line of ${text.length} characters: ${text}`)
  })
})
