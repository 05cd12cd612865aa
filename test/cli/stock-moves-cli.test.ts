// Issue 46: `petstore adjust` and `petstore batch`, the operator's stock moves, beside a running
// server on the same database: what they apply is what the API then shows, and a refused one changes nothing.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { useAppSuite } from '../support/app.js'
import { BACKENDS, type CliResult, parseExact, runCli, runCliInProcess } from '../support/helpers.js'
import { importInventory, type InventoryChange, quantityOf, readAllChanges } from '../support/ledger-client.js'

const ABOVE_DOUBLE = 9007199254740993n
const INT64_MIN = -9223372036854775808n
const MAX_QUANTITY = 2147483647
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

interface Entry {
  petId: bigint
  quantity: number
  status: string
}

/** A change as a batch file holds it, petIds written digit for digit. */
const changeText = (change: Record<string, unknown>) =>
  `{${Object.entries(change)
    .map(([k, v]) => `${JSON.stringify(k)}:${typeof v === 'bigint' ? String(v) : JSON.stringify(v)}`)
    .join(',')}}`

for (const backend of BACKENDS) {
  describe(`petstore adjust and batch beside a running server (${backend.name})`, () => {
    const suite = useAppSuite(backend)
    const cli = (...args: string[]) => suite.server.cli(args)
    const dir = mkdtempSync(join(tmpdir(), 'petstore-stock-moves-'))
    let files = 0
    /** A new file in the suite's directory holding `text`; its path. */
    const file = (text: string | Buffer, extension = '.json') => {
      const path = join(dir, `batch-${++files}${extension}`)
      writeFileSync(path, text)
      return path
    }

    before(async () => {
      await importInventory(suite.server, [
        { petId: 1, quantity: 10 },
        { petId: 2, quantity: 0 },
        { petId: 3, quantity: 5 },
        { petId: 4, quantity: 7, status: 'pending' },
        { petId: 5, quantity: 20 },
        { petId: 6, quantity: 0 },
        { petId: ABOVE_DOUBLE, quantity: 5 },
        { petId: INT64_MIN, quantity: 1 },
        { petId: 9, quantity: MAX_QUANTITY - 1 },
      ])
    })
    after(() => rmSync(dir, { recursive: true, force: true }))

    /** What a refused command must leave as it was: every entry, and the whole ledger. */
    async function state() {
      const { server, token } = suite
      const inventory = await server.request('GET', '/v1/inventory?limit=1000', { token })
      assert.equal(inventory.status, 200, inventory.text)
      return { inventory: inventory.text, ledger: await readAllChanges(server, token) }
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
      assert.deepEqual(await state(), was, 'nothing changed')
      return result
    }

    const newRows = async (after: number) => readAllChanges(suite.server, suite.token, { after })
    const lastSeq = async () => (await readAllChanges(suite.server, suite.token)).at(-1)!.seq

    describe('adjust', () => {
      test('When a delta is adjusted with a reason and a note, then the entry it left is printed as the API JSON, and its ledger row has no key and no request', async () => {
        const from = await lastSeq()
        const result = await cli('adjust', '1', '5', '--reason', 'arrival', '--note', 'crate 7 ü 🐕')
        assert.equal(result.code, 0, result.stderr)
        assert.equal(result.stderr, '')
        assert.equal(result.stdout, '{"petId":1,"quantity":15,"status":"available"}\n')
        assert.equal(await quantityOf(suite.server, suite.token, 1), 15)
        const rows = await newRows(from)
        assert.deepEqual(
          rows.map(({ petId, previousQuantity, quantity, reason, note, orderId, batchId, keyId, requestId }) => ({
            petId,
            previousQuantity,
            quantity,
            reason,
            note,
            orderId,
            batchId,
            keyId,
            requestId,
          })),
          [
            {
              petId: 1n,
              previousQuantity: 10,
              quantity: 15,
              reason: 'arrival',
              note: 'crate 7 ü 🐕',
              orderId: null,
              batchId: null,
              keyId: null,
              requestId: null,
            },
          ],
        )
      })

      test('When DELTA is negative, then it removes, with the reason adjustment by default; options may come first', async () => {
        const from = await lastSeq()
        const removed = await cli('adjust', '1', '-3')
        assert.equal(removed.code, 0, removed.stderr)
        assert.equal(removed.stdout, '{"petId":1,"quantity":12,"status":"available"}\n')
        const lost = await cli('adjust', '--reason', 'loss', '1', '-2')
        assert.equal(lost.code, 0, lost.stderr)
        assert.equal(lost.stdout, '{"petId":1,"quantity":10,"status":"available"}\n')
        assert.deepEqual(
          (await newRows(from)).map((r) => [r.reason, r.previousQuantity, r.quantity, r.note]),
          [
            ['adjustment', 12 + 3, 12, null],
            ['loss', 12, 10, null],
          ],
        )
      })

      test('When PETID is beyond 2^53 or the smallest int64, then it is read exactly, and the status is kept', async () => {
        const big = await cli('adjust', String(ABOVE_DOUBLE), '2', '--reason', 'return')
        assert.equal(big.code, 0, big.stderr)
        assert.equal(big.stdout, `{"petId":${ABOVE_DOUBLE},"quantity":7,"status":"available"}\n`)
        const smallest = await cli('adjust', String(INT64_MIN), '-1', '--reason', 'damage')
        assert.equal(smallest.code, 0, smallest.stderr)
        assert.equal(smallest.stdout, `{"petId":${INT64_MIN},"quantity":0,"status":"available"}\n`)
        const pending = await cli('adjust', '4', '1')
        assert.equal(pending.stdout, '{"petId":4,"quantity":8,"status":"pending"}\n')
        assert.equal(await quantityOf(suite.server, suite.token, ABOVE_DOUBLE), 7)
      })

      test('When the delta would take the stock below 0 or past the maximum, or the pet has no entry, then the error on stderr, exit 1, nothing changed', async () => {
        await refused(() => cli('adjust', '2', '-1'), 1, 'Error: Pet 2 has 0 in stock; removing 1 would take it below zero')
        await refused(() => cli('adjust', '3', '-6'), 1, 'Error: Pet 3 has 5 in stock; removing 6 would take it below zero')
        await refused(
          () => cli('adjust', '9', '2'),
          1,
          `Error: Pet 9 has ${MAX_QUANTITY - 1} in stock; adding 2 would take it past ${MAX_QUANTITY}`,
        )
        await refused(() => cli('adjust', '77777', '1'), 1, 'Error: No inventory entry for pet 77777')
        // The edges themselves apply.
        assert.equal((await cli('adjust', '3', '-5')).stdout, '{"petId":3,"quantity":0,"status":"available"}\n')
        assert.equal((await cli('adjust', '9', '1')).stdout, `{"petId":9,"quantity":${MAX_QUANTITY},"status":"available"}\n`)
      })

      const badLines: [string[], string | RegExp][] = [
        [['1', '0'], /^adjust: DELTA must be a non-zero int32, from -2147483648 to 2147483647 \(got "0"\)$/],
        [['1', '2147483648'], /^adjust: DELTA must be a non-zero int32.*\(got "2147483648"\)$/],
        [['1', '-2147483649'], /^adjust: DELTA must be a non-zero int32.*\(got "-2147483649"\)$/],
        [['1', '1.5'], /^adjust: DELTA must be a non-zero int32.*\(got "1.5"\)$/],
        [['1', '+3'], /^adjust: DELTA must be a non-zero int32/],
        [['1', '05'], /^adjust: DELTA must be a non-zero int32/],
        [['abc', '1'], 'adjust: PETID must be a decimal int64 (got "abc")'],
        [['9223372036854775808', '1'], 'adjust: PETID must be a decimal int64 (got "9223372036854775808")'],
        [['1e3', '1'], 'adjust: PETID must be a decimal int64 (got "1e3")'],
        [['1', '2', '--reason', 'count'], 'adjust: --reason must be one of: adjustment, arrival, return, damage, loss (got "count")'],
        [['1', '2', '--reason', 'order'], /^adjust: --reason must be one of: .* \(got "order"\)$/],
        [['1', '2', '--note', 'x'.repeat(501)], 'adjust: --note must NOT have more than 500 characters'],
        [['1'], /^adjust: use adjust PETID DELTA \[--reason R\] \[--note TEXT\]/],
        [[], /^adjust: use adjust PETID DELTA/],
        [['1', '2', '3'], "Unexpected argument '3' for 'petstore adjust'"],
        [['1', '-2', '-3'], "Unexpected argument '-3' for 'petstore adjust'"],
        [['1', '2', '--bogus'], "Unknown option '--bogus' for 'petstore adjust'"],
        [['1', '2', '--reason'], /--reason/],
      ]
      for (const [args, first] of badLines) {
        test(`When the command line is 'adjust ${args.join(' ').slice(0, 40)}', then exit 2 naming the problem, the usage, nothing changed`, async () => {
          await refused(() => cli('adjust', ...args), 2, first)
        })
      }
    })

    describe('batch', () => {
      /** Runs a batch that must apply; its parsed output. */
      async function applied(result: CliResult): Promise<{ batchId: string; entries: Entry[] }> {
        assert.equal(result.code, 0, result.stderr)
        assert.equal(result.stderr, '')
        assert.ok(result.stdout.endsWith('}\n') && !result.stdout.slice(0, -1).includes('\n'), 'one line')
        const out = parseExact(result.stdout) as { batchId: string; entries: Entry[] }
        assert.deepEqual(Object.keys(out), ['batchId', 'entries'])
        assert.match(out.batchId, UUID)
        return out
      }

      test('When a file holds {"changes":[...]}, then they apply in order as one batch: its entries printed, its ledger rows contiguous and carrying its id', async () => {
        const from = await lastSeq()
        const path = file(
          `{"changes":[${[
            changeText({ petId: 5, delta: 12, reason: 'arrival', note: 'Delivery 2026-12-05' }),
            changeText({ petId: ABOVE_DOUBLE, quantity: 40, expectedQuantity: 7, reason: 'count' }),
            changeText({ petId: 5, delta: -2, reason: 'damage' }),
            changeText({ petId: 6, quantity: 3 }),
          ].join(',\n')}]}\n`,
        )
        const out = await applied(await cli('batch', path))
        assert.deepEqual(out.entries, [
          { petId: 5n, quantity: 32, status: 'available' },
          { petId: ABOVE_DOUBLE, quantity: 40, status: 'available' },
          { petId: 5n, quantity: 30, status: 'available' },
          { petId: 6n, quantity: 3, status: 'available' },
        ])
        const rows = await newRows(from)
        assert.deepEqual(
          rows.map((r: InventoryChange) => [
            r.seq - from,
            r.petId,
            r.previousQuantity,
            r.quantity,
            r.reason,
            r.note,
            r.batchId,
            r.keyId,
            r.requestId,
          ]),
          [
            [1, 5n, 20, 32, 'arrival', 'Delivery 2026-12-05', out.batchId, null, null],
            [2, ABOVE_DOUBLE, 7, 40, 'count', null, out.batchId, null, null],
            [3, 5n, 32, 30, 'damage', null, out.batchId, null, null],
            [4, 6n, 0, 3, 'adjustment', null, out.batchId, null, null],
          ],
        )
        assert.equal(await quantityOf(suite.server, suite.token, 5), 30)
      })

      test('When a file holds a bare array, then it is the changes', async () => {
        const out = await applied(
          await cli('batch', file(`[${changeText({ petId: 6, delta: 1 })},${changeText({ petId: INT64_MIN, delta: 4 })}]`)),
        )
        assert.deepEqual(out.entries, [
          { petId: 6n, quantity: 4, status: 'available' },
          { petId: INT64_MIN, quantity: 4, status: 'available' },
        ])
      })

      test('When a file holds NDJSON, then each line is a change; blank lines and CRLF endings are fine, and a one-line file is one change', async () => {
        const lines = [
          changeText({ petId: 6, delta: 1, reason: 'return' }),
          '',
          changeText({ petId: 6, quantity: 9, expectedQuantity: 5 }),
          '  ',
        ]
        const out = await applied(await cli('batch', file(`${lines.join('\r\n')}\r\n`, '.ndjson')))
        assert.deepEqual(
          out.entries.map((e) => e.quantity),
          [5, 9],
        )
        const one = await applied(await cli('batch', file(changeText({ petId: 6, delta: -9 }), '.ndjson')))
        assert.deepEqual(one.entries, [{ petId: 6n, quantity: 0, status: 'available' }])
      })

      test('When FILE is -, then the changes are read from stdin, as JSON or as NDJSON', async () => {
        const { env } = suite.server
        const json = await applied(await runCli(['batch', '-'], env, `{"changes":[${changeText({ petId: 6, delta: 2 })}]}`))
        assert.deepEqual(json.entries, [{ petId: 6n, quantity: 2, status: 'available' }])
        const ndjson = await applied(
          await runCli(['batch', '-'], env, `${changeText({ petId: 6, delta: 1 })}\n${changeText({ petId: ABOVE_DOUBLE, delta: -1 })}\n`),
        )
        assert.deepEqual(ndjson.entries, [
          { petId: 6n, quantity: 3, status: 'available' },
          { petId: ABOVE_DOUBLE, quantity: 39, status: 'available' },
        ])
        await refused(() => runCli(['batch', '-'], env, ''), 1, 'Error: stdin holds no changes: a batch has 1 to 1000')
        await refused(
          () => runCli(['batch', '-'], env, `${changeText({ petId: 6, delta: -1 })}\n${changeText({ petId: 2, delta: -1 })}\n`),
          1,
          'Error: changes[1]: pet 2 has 0 in stock; removing 1 would take it below zero',
        )
      })

      test('When a batch holds 1000 changes, then it applies; 1001, in JSON or NDJSON, are refused and nothing is applied', async () => {
        const thousand = Array.from({ length: 1000 }, () => changeText({ petId: 6, delta: 1 }))
        const out = await applied(await cli('batch', file(`[${thousand.join(',')}]`)))
        assert.equal(out.entries.length, 1000)
        assert.equal(out.entries.at(-1)!.quantity, 1003)
        const more = [...thousand, changeText({ petId: 6, delta: 1 })]
        const tooMany = 'holds more than 1000 changes, the most a batch may hold: split it'
        const json = file(`{"changes":[${more.join(',')}]}`)
        await refused(() => cli('batch', json), 1, `Error: ${json} ${tooMany}`)
        const ndjson = file(more.join('\n'), '.ndjson')
        await refused(() => cli('batch', ndjson), 1, `Error: ${ndjson} ${tooMany}`)
        await refused(() => runCli(['batch', '-'], suite.server.env, more.join('\n')), 1, `Error: stdin ${tooMany}`)
      })

      test('When a change cannot apply, then the error names it by its index, exit 1, and none of the batch is applied', async () => {
        const batch = (...changes: Record<string, unknown>[]) => file(`{"changes":[${changes.map(changeText).join(',')}]}`)
        await refused(
          () => cli('batch', batch({ petId: 5, delta: 1 }, { petId: 2, delta: -1000 })),
          1,
          'Error: changes[1]: pet 2 has 0 in stock; removing 1000 would take it below zero',
        )
        await refused(
          () => cli('batch', batch({ petId: 5, delta: 1 }, { petId: 5, quantity: 1 }, { petId: 77777, delta: 1 })),
          1,
          'Error: changes[2]: no inventory entry for pet 77777',
        )
        await refused(
          () => cli('batch', batch({ petId: 5, quantity: 1, expectedQuantity: 3 })),
          1,
          'Error: changes[0]: pet 5 has 30 in stock, not the expectedQuantity 3; nothing was changed',
        )
        await refused(
          () => cli('batch', batch({ petId: 5, delta: -30 }, { petId: 5, delta: -1 })),
          1,
          'Error: changes[1]: pet 5 has 0 in stock; removing 1 would take it below zero',
        )
        await refused(
          () => cli('batch', batch({ petId: 9, delta: 1 })),
          1,
          `Error: changes[0]: pet 9 has ${MAX_QUANTITY} in stock; adding 1 would take it past ${MAX_QUANTITY}`,
        )
      })

      const ok = changeText({ petId: 5, delta: 1 })
      const badChanges: [string, string, string | RegExp][] = [
        ['a delta of 0', `[${ok},{"petId":5,"delta":0}]`, 'changes[1].delta must not be 0'],
        ['quantity and delta', `[{"petId":5,"quantity":1,"delta":1}]`, 'changes[0] must have quantity or delta, not both'],
        ['neither quantity nor delta', `[{"petId":5,"reason":"count"}]`, 'changes[0] must have quantity or delta'],
        [
          'expectedQuantity with a delta',
          `[{"petId":5,"delta":1,"expectedQuantity":2}]`,
          'changes[0].expectedQuantity goes only with quantity, not delta',
        ],
        ['count with a delta', `[{"petId":5,"delta":1,"reason":"count"}]`, 'changes[0].reason count goes only with quantity, not delta'],
        [
          'an unknown reason',
          `[{"petId":5,"delta":1,"reason":"order"}]`,
          'changes[0].reason must be one of: adjustment, arrival, return, count, damage, loss',
        ],
        ['an unknown field', `[${ok},${ok},{"petId":5,"delta":1,"sku":"x"}]`, 'changes[2] has unknown field "sku"'],
        ['no petId', `[{"delta":1}]`, "changes[0] is missing required field 'petId'"],
        ['a petId as text', `[{"petId":"5","delta":1}]`, 'changes[0].petId must be integer'],
        [
          'a petId with a fraction',
          `[{"petId":5.0,"delta":1}]`,
          'changes[0].petId must be a decimal int64 integer (no fraction or exponent)',
        ],
        [
          'a petId with an exponent',
          `[{"petId":5e0,"delta":1}]`,
          'changes[0].petId must be a decimal int64 integer (no fraction or exponent)',
        ],
        [
          'a petId past int64',
          `[{"petId":9223372036854775808,"delta":1}]`,
          'changes[0].petId must be a decimal int64 integer (no fraction or exponent)',
        ],
        ['a fractional delta', `[{"petId":5,"delta":1.5}]`, 'changes[0].delta must be integer'],
        ['a delta past int32', `[{"petId":5,"delta":2147483648}]`, 'changes[0].delta must be <= 2147483647'],
        ['a negative quantity', `[{"petId":5,"quantity":-1}]`, 'changes[0].quantity must be >= 0'],
        ['a quantity as text', `[{"petId":5,"quantity":"3"}]`, 'changes[0].quantity must be integer'],
        [
          'a note too long',
          `[{"petId":5,"delta":1,"note":${JSON.stringify('n'.repeat(501))}}]`,
          'changes[0].note must NOT have more than 500 characters',
        ],
        ['a change that is not an object', `[${ok},[5,1]]`, 'changes[1] must be an object {petId, quantity or delta, ...}'],
        ['no changes', '{"changes":[]}', '$FILE holds no changes: a batch has 1 to 1000'],
        ['changes that are not an array', '{"changes":{"petId":5,"delta":1}}', 'changes must be an array'],
        [
          'a field beside changes',
          `{"changes":[${ok}],"dryRun":true}`,
          '$FILE has unknown field "dryRun"; it must be {"changes":[...]}, an array of changes, or one change per line (NDJSON)',
        ],
        ['a number', '42', '$FILE must be {"changes":[...]}, an array of changes, or one change per line (NDJSON)'],
        ['a key repeated with another value', `[{"petId":5,"delta":1,"delta":2}]`, 'Not valid JSON: the key "delta" is repeated'],
        ['JSON cut short', `{"changes":[\n${ok},\n`, /^Not valid JSON: /],
        ['an NDJSON line that is not JSON', `${ok}\n${ok}\n{"petId":5,"delta":}\n`, /^line 3: Not valid JSON: /],
        ['nothing but blank lines', '\n  \n', '$FILE holds no changes: a batch has 1 to 1000'],
      ]
      for (const [what, text, message] of badChanges) {
        test(`When a batch file holds ${what}, then exit 1 naming it, and nothing is applied`, async () => {
          const path = file(text)
          // A pattern's leading ^ moves before the 'Error: ' every refusal starts with.
          const expected =
            typeof message === 'string' ? `Error: ${message.replace('$FILE', path)}` : new RegExp(`^Error: ${message.source.slice(1)}`)
          await refused(() => cli('batch', path), 1, expected)
        })
      }

      test('When the file is not UTF-8, larger than 8 MiB, missing, or not a regular file, then it is refused and nothing is applied', async () => {
        const latin1 = file(Buffer.from(`[{"petId":5,"delta":1,"note":"caf\xe9"}]`, 'latin1'))
        await refused(() => cli('batch', latin1), 1, `Error: ${latin1} is not valid UTF-8`)
        const huge = file(`[${ok}${' '.repeat(8 * 1024 * 1024)}]`)
        await refused(() => cli('batch', huge), 1, `Error: ${huge} is larger than the limit of 8 MiB a batch file may hold`)
        await refused(() => cli('batch', join(dir, 'absent.json')), 1, `Error: Cannot read ${join(dir, 'absent.json')}: no such file`)
        await refused(
          () => cli('batch', dir),
          1,
          `Error: Cannot read ${dir}: not a regular file; batch reads a regular file, or stdin with -`,
        )
        await refused(
          () => cli('batch', '/dev/null'),
          1,
          'Error: Cannot read /dev/null: not a regular file; batch reads a regular file, or stdin with -',
        )
      })

      test('When the command line is wrong, then exit 2 naming it, the usage, nothing applied', async () => {
        const path = file(`[${ok}]`)
        await refused(() => cli('batch'), 2, 'batch: use batch FILE, or batch - to read the changes from stdin')
        await refused(() => cli('batch', path, 'extra'), 2, "Unexpected argument 'extra' for 'petstore batch'")
        await refused(() => cli('batch', path, '--bogus'), 2, "Unknown option '--bogus' for 'petstore batch'")
        await refused(() => cli('batch', '--dry-run', path), 2, "Unknown option '--dry-run' for 'petstore batch'")
      })
    })
  })
}

describe('petstore usage lists adjust and batch', () => {
  test('When help is asked for, then adjust and batch are among the commands', async () => {
    const result = await runCliInProcess(['help'], {})
    assert.equal(result.code, 0)
    assert.match(result.stdout, /\n {2}adjust PETID DELTA \[--reason R\] \[--note TEXT\]\n/)
    assert.match(result.stdout, /\n {2}batch FILE\|- {2,}apply the changes in FILE/)
  })
})
