import assert from 'node:assert/strict'
import { test } from 'node:test'
import { keptTickObject } from '../../src/tick-shape.js'

test('When the process entry has run tick-shape.ts, then one of Node’s nextTick objects is held for the life of the process', () => {
  // If Node stops reporting TickObjects to init hooks, nothing is held and the workaround is inert.
  const kept = keptTickObject()
  assert.ok(kept !== undefined, 'no TickObject was caught')
  assert.equal(typeof (kept as { callback?: unknown }).callback, 'function')
})
