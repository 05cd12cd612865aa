import assert from 'node:assert/strict'
import { errorCodes, type FastifyError } from 'fastify'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import {
  ERROR_CODES,
  RULE_CODES,
  InvalidInputError,
  codeForStatus,
  NotFoundError,
  UnauthorizedError,
  UnavailableError,
} from '../../src/errors.js'
import { ErrorSchema } from '../../src/http/error.schema.js'
import { classify } from '../../src/http/errors.js'

const statusOf = (code: keyof typeof ERROR_CODES) => ERROR_CODES[code]

describe('error classification', () => {
  test("When any error Fastify defines is raised, then it keeps its status and gets that status's documented code", () => {
    const seen = new Set<number>()
    for (const [name, FastifyErrorClass] of Object.entries(errorCodes)) {
      const error = new (FastifyErrorClass as new () => FastifyError)()
      const status = error.statusCode ?? 500
      seen.add(status)
      const { code, undocumented } = classify(error)
      assert.equal(undocumented, undefined, `${name} (${status}) has no documented code`)
      assert.equal(statusOf(code), status, `${name}: ${status} became ${code}`)
    }
    // The walk above covered client and server errors alike.
    assert.ok([...seen].some((s) => s < 500) && seen.has(500), [...seen].join(','))
  })

  test('When a 4xx the service has no code for is raised (409, 422), then it is not turned into a 400', () => {
    for (const status of [402, 409, 418, 422]) {
      const error = Object.assign(new Error('from a plugin'), { statusCode: status }) as FastifyError
      const { code, undocumented } = classify(error)
      assert.notEqual(code, 'invalid_request', `${status} must not become a 400`)
      assert.equal(code, 'internal_error')
      assert.equal(undocumented, status, 'and it is reported as a bug')
    }
  })

  test('When a plugin raises 429, then it keeps its own code, rate_limited', () => {
    const error = Object.assign(new Error('slow down'), { statusCode: 429 }) as FastifyError
    assert.equal(classify(error).code, 'rate_limited')
  })

  test('When a framework error is a server error, then its message reveals nothing', () => {
    const error = Object.assign(new Error('SELECT * FROM secret_table failed'), { statusCode: 500 }) as FastifyError
    assert.deepEqual(classify(error), { code: 'internal_error', message: 'Internal server error' })
    assert.deepEqual(classify(new Error('boom') as FastifyError), { code: 'internal_error', message: 'Internal server error' })
  })

  test('When a domain error is raised, then its code and message are kept', () => {
    for (const error of [
      new InvalidInputError('bad'),
      new NotFoundError('none'),
      new UnauthorizedError('who'),
      new UnavailableError('later', 'database'),
    ]) {
      assert.deepEqual(classify(error as unknown as FastifyError), { code: error.code, message: error.message })
    }
  })

  test('When the codes are listed, then each status has exactly one code besides the codes of domain rules', () => {
    const statuses = Object.entries(ERROR_CODES)
      .filter(([code]) => !RULE_CODES.includes(code as keyof typeof ERROR_CODES))
      .map(([, status]) => status)
    assert.equal(new Set(statuses).size, statuses.length)
  })

  test('When a bare status is classified, then it never becomes a rule code: each rule shares its status with other codes', () => {
    assert.ok(RULE_CODES.length > 0)
    for (const code of RULE_CODES) {
      const status = ERROR_CODES[code]
      const others = Object.entries(ERROR_CODES).filter(([other, s]) => s === status && other !== code)
      assert.ok(others.length > 0, `${code} is the only code of ${status}: it is that status's code, not a rule`)
      const error = Object.assign(new Error('from a plugin'), { statusCode: status }) as FastifyError
      const general = codeForStatus(status)
      if (general === undefined) {
        // Only rules send this status (409): a bare one is a bug, reported rather than taken for one of them.
        assert.equal(classify(error).code, 'internal_error', code)
        assert.equal(classify(error).undocumented, status, code)
      } else {
        // The status has a general code (400 invalid_request, 429 rate_limited): a bare one is that.
        assert.ok(!RULE_CODES.includes(general), `${status} maps to ${general}, a rule code`)
        assert.equal(classify(error).code, general, `a bare ${status} is ${general}, never ${code}`)
      }
    }
  })
})

describe('the error codes in the docs', () => {
  test('When docs/api.md lists the error codes, then they are exactly the Error schema’s code enum, each with its status', () => {
    const doc = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8')
    const section = doc.slice(doc.indexOf('\n## Error codes\n'), doc.indexOf('\n## ', doc.indexOf('\n## Error codes\n') + 1))
    const listed = [...section.matchAll(/`([a-z_]+)` (\d{3})\b/g)].map(([, code, status]) => [code, Number(status)])
    assert.deepEqual(Object.fromEntries(listed), ERROR_CODES)
    assert.equal(listed.length, Object.keys(ERROR_CODES).length, 'each code once')
    assert.deepEqual((ErrorSchema.properties.code as { enum?: string[] }).enum, Object.keys(ERROR_CODES))
  })

  test('When the README speaks of error codes, then it names no code but points to the list in docs/api.md', () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
    assert.match(readme, /\(docs\/api\.md#error-codes\)/)
    // A partial copy would drift: the one list is docs/api.md's (the session's sample output aside).
    const outsideSession = readme.replace(/```sh[\s\S]*?```/g, '')
    const named = Object.keys(ERROR_CODES).filter((code) => outsideSession.includes(`\`${code}\``))
    assert.deepEqual(named, [])
  })
})
