// A node:test reporter (npm test adds it beside spec): at the end of the run, the ten test files that
// took longest, each with its own wall time, so that CI's log shows where the suite's time goes and
// growth is seen when it happens.
import { resolve } from 'node:path'

const SHOWN = 10

interface TestEvent {
  type: string
  data: { name?: string; nesting?: number; file?: string; details?: { duration_ms?: number } }
}

export default async function* slowestFiles(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const files = new Map<string, number>()
  for await (const event of source) {
    // Each file run in a process of its own ends with a test:complete at nesting 0 named after the
    // file itself, whose duration is the file's whole run (its hooks included).
    if (event.type !== 'test:complete') continue
    const { name, nesting, file, details } = event.data
    if (nesting !== 0 || name === undefined || file === undefined || resolve(name) !== file) continue
    files.set(name, details?.duration_ms ?? 0)
  }
  if (files.size === 0) return
  const slowest = [...files].sort((a, b) => b[1] - a[1]).slice(0, SHOWN)
  const total = [...files.values()].reduce((a, b) => a + b, 0)
  yield `\nThe ${slowest.length} slowest of ${files.size} test files (their times add up to ${(total / 1000).toFixed(0)} s; files run side by side):\n`
  for (const [name, ms] of slowest) yield `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${name}\n`
}
