import assert from 'node:assert/strict'
import { test } from 'node:test'
import { postgresUnavailable } from '../support/helpers.js'

// Every HTTP-level suite runs on PostgreSQL too when it is reachable. On a machine without it the
// PostgreSQL runs are skipped, and this test says why; in CI, PostgreSQL is required.
const reason = await postgresUnavailable()

test('PostgreSQL backend is available for the suites', { skip: !process.env.CI && reason }, () => {
  assert.equal(reason, undefined, reason)
})
