// The bench's own arithmetic: the figures bench/RESULTS.md judges goals on.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Measured } from '../../bench/load.js'
import { parseWrk } from '../../bench/load.js'
import { stealPercent } from '../../bench/procs.js'
import { goals, medianP99, type Row } from '../../bench/report.js'

const run = (rps: number, p99: number, stealPct?: number): Measured => ({
  rps,
  p50: 1,
  p99,
  completed: rps * 5,
  non2xx: 0,
  errors: 0,
  errorDetail: 'none',
  ...(stealPct === undefined ? {} : { stealPct }),
})

const row = (target: string, runs: Measured[]): Row => ({
  scenario: 'patch',
  target,
  runs,
  measured: [...runs].sort((a, b) => a.rps - b.rps)[1],
})

describe('bench figures', () => {
  test('a p99 goal is judged on the median of the rounds, so one stalled round counts once', () => {
    // The median round by req/s (110) is the one the machine stalled: its p99 is 45 ms.
    const service = row('service/sqlite', [run(100, 9), run(110, 45), run(120, 12)])
    assert.equal(service.measured?.p99, 45)
    assert.equal(medianP99(service), 12)
    const bare = row('bare', [run(200, 3), run(210, 30), run(190, 4)])
    const line = goals([service, bare], [], ['sqlite']).find((g) => g.goal.startsWith('sqlite: patch p99'))
    assert.ok(line)
    assert.equal(line.met, true)
    assert.match(line.measured, /^12\.0 ms, median of the rounds \(9\.00, 45\.0, 12\.0; .*bare in the same run: 4\.00 ms$/)
    const slow = row('service/sqlite', [run(100, 45), run(120, 21), run(110, 30)])
    assert.equal(goals([slow, bare], [], ['sqlite']).find((g) => g.goal.startsWith('sqlite: patch p99'))?.met, false)
  })

  test('an even number of rounds takes the higher middle p99', () => {
    assert.equal(medianP99(row('bare', [run(1, 5), run(1, 1), run(1, 9), run(1, 7)])), 7)
    assert.equal(medianP99({ scenario: 'patch', target: 'bare', runs: [] }), undefined)
  })

  test('steal is the stolen share of all CPU time between two readings', () => {
    assert.equal(stealPercent({ total: 1000, steal: 10 }, { total: 1400, steal: 110 }), 25)
    assert.equal(stealPercent({ total: 1000, steal: 10 }, { total: 1000, steal: 10 }), undefined)
    assert.equal(stealPercent(undefined, { total: 1000, steal: 10 }), undefined)
  })

  test('wrk output is read to the number', () => {
    const out = [
      'Running 5s test @ http://127.0.0.1:1/v1/inventory',
      '  Latency Distribution',
      '     50%    2.04ms',
      '     99%   29.70ms',
      '  136660 requests in 5.00s, 1.68GB read',
      '  Socket errors: connect 0, read 2, write 0, timeout 1',
      '  Non-2xx or 3xx responses: 3',
      'Requests/sec:  27332.41',
    ].join('\n')
    const m = parseWrk(out)
    assert.deepEqual(
      { rps: m.rps, p50: m.p50, p99: m.p99, completed: m.completed, non2xx: m.non2xx, errors: m.errors },
      { rps: 27332.41, p50: 2.04, p99: 29.7, completed: 136660, non2xx: 3, errors: 3 },
    )
    assert.throws(() => parseWrk('Requests/sec: 1\n  5 requests in 1.00s\n'), /no 50% latency line/)
  })
})
