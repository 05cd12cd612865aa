import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, parseExact, runCliInProcess } from '../support/helpers.js'
import { importInventory, placeOrder, readAllChanges, setOrderStatus, type InventoryChange } from '../support/ledger-client.js'

const ABOVE_DOUBLE = 9007199254740993n
const INT64_MIN = -9223372036854775808n
const HEADER = 'SEQ\tAT\tREASON\tFROM\tTO\tORDER\tBATCH\tKEY\tREQUEST\tNOTE'
/** A note as its cell shows it: backslash, tab, CR and LF escaped, and every other control as \u{…}, so one change stays one plain line. */
const escaped = (note: string) =>
  note
    .replaceAll('\\', '\\\\')
    .replaceAll('\t', '\\t')
    .replaceAll('\r', '\\r')
    .replaceAll('\n', '\\n')
    .replace(/\p{Cc}/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`)

const line = (c: InventoryChange) =>
  [
    c.seq,
    c.at,
    c.reason,
    c.previousQuantity ?? '-',
    c.quantity,
    c.orderId ?? '-',
    c.batchId?.slice(0, 8) ?? '-',
    c.keyId ?? '-',
    c.requestId ?? '-',
    c.note === null ? '-' : escaped(c.note),
  ].join('\t')
const table = (rows: InventoryChange[]) => `${[HEADER, ...rows.map(line)].join('\n')}\n`

for (const backend of BACKENDS) {
  describe(`petstore history beside a running server (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    const cli = (...args: string[]) => suite.server.cli(args)
    /** One pet's rows, newest first, as the API gives them. */
    const newestFirst = async (petId: bigint) => (await readAllChanges(suite.server, suite.token, { petId })).reverse()

    before(async () => {
      const { server, token } = suite
      await importInventory(server, [
        { petId: 1, quantity: 10 },
        { petId: 2, quantity: 0 },
        { petId: ABOVE_DOUBLE, quantity: 5 },
        { petId: INT64_MIN, quantity: 1 },
        { petId: 3, quantity: 0 },
      ])
      const ok = (status: number, expected: number) => assert.equal(status, expected)
      ok(
        (await server.request('PATCH', '/v1/inventory/1', { token, body: { quantity: 12 }, headers: { 'x-request-id': 'history-1' } }))
          .status,
        200,
      )
      const order = await placeOrder(server, token, { petId: 1, quantity: 2 })
      ok(order.status, 201)
      ok((await setOrderStatus(server, token, order.body.id, 'cancelled')).status, 200)
      ok((await server.request('PATCH', `/v1/inventory/${ABOVE_DOUBLE}`, { token, body: { quantity: 6 } })).status, 200)
      // 55 changes for pet 2: more than the default 50.
      for (let q = 1; q <= 54; q++) ok((await server.request('PATCH', '/v1/inventory/2', { token, body: { quantity: q } })).status, 200)
      await importInventory(server, [{ petId: 1, quantity: 3 }])
    })

    test("When a pet's history is asked for, then a tab-separated table of its changes, newest first, with - for nulls", async () => {
      const rows = await newestFirst(1n)
      assert.deepEqual(
        rows.map((r) => r.reason),
        ['import', 'cancellation', 'order', 'adjustment', 'import'],
      )
      const result = await cli('history', '1')
      assert.equal(result.code, 0, result.stderr)
      assert.equal(result.stdout, table(rows))
      const lines = result.stdout.trimEnd().split('\n')
      assert.match(
        lines.at(-1)!,
        /^\d+\t\S+\timport\t-\t10\t-\t-\t-\t-\t-$/,
        'the creating import: no FROM, ORDER, BATCH, KEY, REQUEST or NOTE',
      )
      assert.ok(
        lines.some((l) => l.endsWith('\thistory-1\t-')),
        "the client's request id",
      )
    })

    test('When changes carry reasons and notes, then REASON shows each and NOTE ends the line, escaped to stay one line', async () => {
      const { server, token } = suite
      const notes = [
        ['arrival', 'crate 7'],
        ['return', 'tab\there\r\nand a line'],
        ['count', 'C:\\shelf\\n is not a newline'],
        ['adjustment', 'ünïcødé 🐕 ok'],
        ['count', ''],
        ['arrival', 'bell\u0007, \u001b[31mred\u001b[0m, DEL\u007f, C1\u009b'],
      ] as const
      for (const [q, [reason, note]] of notes.entries()) {
        const res = await server.request('PATCH', '/v1/inventory/3', { token, body: { quantity: q + 1, reason, note } })
        assert.equal(res.status, 200, res.text)
      }
      assert.equal((await server.request('PATCH', '/v1/inventory/3', { token, body: { quantity: 9, reason: 'return' } })).status, 200)
      const result = await cli('history', '3')
      assert.equal(result.code, 0, result.stderr)
      const lines = result.stdout.trimEnd().split('\n')
      assert.equal(lines.length, 1 + notes.length + 2, 'one line per change: header, seven PATCHes, the import')
      const cells = lines.slice(1).map((l) => l.split('\t'))
      assert.ok(
        cells.every((c) => c.length === 10),
        'ten cells on every line',
      )
      assert.deepEqual(
        cells.map((c) => [c[2], c[9]]),
        [
          ['return', '-'],
          ['arrival', 'bell\\u{7}, \\u{1b}[31mred\\u{1b}[0m, DEL\\u{7f}, C1\\u{9b}'],
          ['count', ''],
          ['adjustment', 'ünïcødé 🐕 ok'],
          ['count', 'C:\\\\shelf\\\\n is not a newline'],
          ['return', 'tab\\there\\r\\nand a line'],
          ['arrival', 'crate 7'],
          ['import', '-'],
        ],
      )
      assert.equal(result.stdout, table(await newestFirst(3n)))
      const json = await cli('history', '3', '--json')
      assert.equal(json.code, 0, json.stderr)
      const rows = parseExact(json.stdout) as InventoryChange[]
      assert.deepEqual(
        rows.map((r) => [r.reason, r.note]),
        [['return', null], ...[...notes].reverse(), ['import', null]],
        'the JSON holds each note exactly',
      )
    })

    test('When --limit is given, then only that many newest changes are shown; by default 50', async () => {
      const rows = await newestFirst(2n)
      assert.equal(rows.length, 55)
      const two = await cli('history', '2', '--limit', '2')
      assert.equal(two.code, 0, two.stderr)
      assert.equal(two.stdout, table(rows.slice(0, 2)))
      const byDefault = await cli('history', '2')
      assert.equal(byDefault.stdout, table(rows.slice(0, 50)))
      for (const limit of ['55', '1000']) assert.equal((await cli('history', '2', '--limit', limit)).stdout, table(rows))
      assert.equal((await cli('history', '--limit', '1', '2')).stdout, table(rows.slice(0, 1)), 'options before the PETID')
    })

    test('When --json is given, then a JSON array of InventoryChange objects, newest first, exact to the digit', async () => {
      for (const [petId, limit] of [
        [1n, undefined],
        [ABOVE_DOUBLE, undefined],
        [2n, '3'],
      ] as const) {
        const rows = await newestFirst(petId)
        const result = await cli('history', String(petId), '--json', ...(limit ? ['--limit', limit] : []))
        assert.equal(result.code, 0, result.stderr)
        assert.deepEqual(parseExact(result.stdout), limit ? rows.slice(0, Number(limit)) : rows.slice(0, 50))
        if (petId === ABOVE_DOUBLE) assert.ok(result.stdout.includes(`"petId":${ABOVE_DOUBLE}`), result.stdout)
      }
    })

    test('When the pet has no changes, then the header alone or [], exit 0', async () => {
      for (const petId of ['777', String(ABOVE_DOUBLE + 1n)]) {
        const plain = await cli('history', petId)
        assert.equal(plain.code, 0, plain.stderr)
        assert.equal(plain.stdout, `${HEADER}\n`)
        const json = await cli('history', petId, '--json')
        assert.equal(json.code, 0, json.stderr)
        assert.deepEqual(JSON.parse(json.stdout), [])
      }
    })

    test('When PETID is a negative int64, then it is a PETID, not an option', async () => {
      const rows = await newestFirst(INT64_MIN)
      assert.equal(rows.length, 1)
      const result = await cli('history', String(INT64_MIN))
      assert.equal(result.code, 0, result.stderr)
      assert.equal(result.stdout, table(rows))
    })

    for (const args of [['abc'], ['1.5'], ['9223372036854775808'], ['-9223372036854775809'], ['0x10'], [], ['1', '2']]) {
      test(`When PETID is ${args.length ? `'${args.join(' ')}'` : 'missing'}, then exit 2 with the usage, nothing on stdout`, async () => {
        const result = await cli('history', ...args)
        assert.equal(result.code, 2, result.stderr)
        assert.equal(result.stdout, '')
        assert.match(result.stderr, /Usage: petstore/)
      })
    }

    for (const limit of ['0', '1001', 'abc', '-1', '2.5']) {
      test(`When --limit is '${limit}', then it fails with nothing on stdout`, async () => {
        const result = await cli('history', '1', '--limit', limit)
        assert.notEqual(result.code, 0)
        assert.equal(result.stdout, '')
        assert.match(result.stderr, /limit/i)
      })
    }
  })
}

describe('petstore usage lists history', () => {
  test('When help is asked for, then history is among the commands', async () => {
    const result = await runCliInProcess(['help'], {})
    assert.equal(result.code, 0)
    assert.match(result.stdout, /history PETID/)
  })
})
