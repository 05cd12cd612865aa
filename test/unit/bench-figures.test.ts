// The bench's own arithmetic: the figures bench/RESULTS.md judges goals on.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type HoldsResult, holdsGoals, type Probe } from '../../bench/holds.js'
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

  test('holds: the expiry is judged from T, the PATCHes on the longest in its window, a hot pet on the median round', () => {
    const probe = (max: number): Probe => ({ requests: 1000, seconds: 2, p50: 1, p99: 5, p999: max - 1, max, cpuUs: 50 })
    const sample = (rps: number) => ({ rps, p50: 1, p99: 2, usPerRequest: 80, userUs: 70, sysUs: 10 })
    const r: HoldsResult = {
      command: 'BENCH_SCENARIOS=holds npm run bench',
      date: '2026-12-06T00:00:00.000Z',
      loadAverage: 1,
      machine: 'test',
      node: 'v24',
      wrk: 'wrk',
      settings: { rounds: 3, requests: 100, active: 10, expiring: 100_000, probeConnections: 8, probeDelayMs: 10, referenceSeconds: 8 },
      backends: ['sqlite', 'postgres'],
      notes: [],
      rows: [
        {
          backend: 'sqlite',
          scenario: 'patch-none',
          rounds: [900, 1000, 1100].map((rps) => ({ sample: sample(rps) })),
          rps: 1000,
          cpuUs: 60,
        },
        {
          backend: 'sqlite',
          scenario: 'hold-one',
          rounds: [700, 1200, 1300].map((rps) => ({ sample: sample(rps), rpsRatio: 1, cpuRatio: 1.2 })),
          rps: 1200,
          cpuUs: 72,
          cpuRatio: 1.2,
        },
        { backend: 'postgres', scenario: 'hold-one', rounds: [{ sample: sample(10) }], rps: 10, cpuUs: 300 },
      ],
      expiry: [
        {
          backend: 'sqlite',
          backMs: 30_000,
          firstMs: 100,
          lastMs: 29_900,
          cpuUsPerHold: 20,
          before: probe(60),
          during: probe(50),
          after: probe(9),
        },
        { backend: 'postgres', left: 5_000, during: probe(50.5) },
      ],
      seconds: 1,
    }
    const goals = holdsGoals(r)
    assert.deepEqual(
      goals.map((g) => g.met),
      [true, true, true, false, false],
    )
    assert.match(goals[0]!.measured, /^30\.0 s after the second's start .*3,356 holds\/s/)
    assert.match(goals[1]!.measured, /^max 50\.0 ms, .*max 60\.0 and 9\.00 ms/)
    assert.match(goals[2]!.measured, /^1,200 holds\/s \(median of 3 rounds, 700-1300\); 72\.0 µs .* 60\.0 µs a PATCH .*\(× 1\.20\)$/)
    assert.equal(goals[3]!.measured, '5,000 still active after 120 s')
    // No hot-pet goal on PostgreSQL: the issue states it for SQLite.
    assert.equal(goals.length, 5)
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
