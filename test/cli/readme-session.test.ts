// The README's "A curl session" runs here, verbatim but for the port, beside a real server, and
// every step that shows its output in the README must print exactly that. So the README cannot
// drift from what the service and the CLI do, and its commands keep working after a build.
//
// Which block: the first ```sh (or bash, shell, console, or untagged) block in README.md that
// contains both `curl ` and `TOKEN=` (the rule a newcomer's check of a fresh clone uses too).
// `127.0.0.1:8080` and `localhost:8080` become the test server's address.
//
// How the block splits into steps (the README says "comment lines right after a command show its
// output"):
//   - A command is a line that is neither blank nor a comment (`#` after optional indentation).
//     A line ending in `\` continues onto the next line, which belongs to the same command.
//     Every command must be complete in itself (no multi-line `if`, heredoc and the like).
//   - The comment lines DIRECTLY after a command (no blank line in between) are its expected
//     stdout, one comment line per output line, with the leading `# ` (or `#`) removed.
//   - Every other comment line (at the start, or after a blank line, so before a command) is a
//     description and is ignored. So a description must be separated from the previous command
//     by a blank line, or it would be read as that command's output.
//   - In an expected output, `…` (U+2026) matches any text, possibly empty, possibly several lines.
//     Everything else must match exactly. A comment cannot show whether the output ends with a
//     newline, so one trailing newline of the actual output is ignored (curl -s prints none;
//     the CLI ends its lines with one).
//   - A command with no expected output may print anything; it must only succeed.
//
// All steps run in ONE bash process under `set -euo pipefail`, as a user would type them (they
// share variables such as TOKEN). Before each command the script prints a marker line on stdout
// and stderr, so the output can be cut back into steps afterwards.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runProcess, sqliteDatabase, useResources, type Backend } from '../support/helpers.js'

/** The repository root: the compiled test runs as dist/test/cli/readme-session.test.js. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const BIN = fileURLToPath(new URL('../../src/cli.js', import.meta.url))
const SQLITE: Backend = { name: 'sqlite', create: async () => sqliteDatabase() }
// Read before anything here runs npx: the first `npx petstore` from a directory links the package
// into npx's cache and, doing so, sets the bin's execute bit itself. Later runs reuse that link and
// trust the bit, so a build that leaves it unset breaks npx only from the second build on.
const BIN_MODE_AFTER_BUILD = statSync(BIN).mode

// ---- Reading the README --------------------------------------------------------------------

/** The README's shell session, or undefined when it has none (a test then says so). */
function readmeSession(markdown: string): string | undefined {
  const blocks = [...markdown.matchAll(/```(?:sh|bash|shell|console)?\n([\s\S]*?)```/g)].map((m) => m[1]!)
  return blocks.find((b) => /curl /.test(b) && /TOKEN=/.test(b))
}

/** Points the session at the test server instead of the README's default port. */
function withPort(session: string, port: number): string {
  return session.replace(/(127\.0\.0\.1|localhost):8080/g, `127.0.0.1:${port}`)
}

interface Step {
  /** The command as written, continuation lines included (so bash sees it verbatim). */
  command: string
  /** The lines of its expected stdout, or undefined when the README shows none. */
  expected: string[] | undefined
}

const isComment = (line: string) => /^\s*#/.test(line)
const isBlank = (line: string) => line.trim() === ''
/** `# text` -> `text`; `#` alone -> `` (an empty output line). */
const uncomment = (line: string) => line.replace(/^\s*# ?/, '')

/** Splits a session into steps by the rule at the top of this file. */
function parseSteps(session: string): Step[] {
  const lines = session.split('\n')
  const steps: Step[] = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i]!
    if (isBlank(line) || isComment(line)) {
      i++ // a description, or a separator
      continue
    }
    const command = [line]
    while (command.at(-1)!.endsWith('\\') && i + 1 < lines.length) command.push(lines[++i]!)
    i++
    const expected: string[] = []
    while (i < lines.length && isComment(lines[i]!)) expected.push(uncomment(lines[i++]!))
    steps.push({ command: command.join('\n'), expected: expected.length > 0 ? expected : undefined })
  }
  return steps
}

/** Whether `actual` is what `expected` shows, `…` matching any text. */
function matchesExpected(actual: string, expected: string[]): boolean {
  const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const pattern = expected.join('\n').split('…').map(escaped).join('[\\s\\S]*')
  return new RegExp(`^${pattern}$`).test(actual.replace(/\n$/, ''))
}

// ---- Running it --------------------------------------------------------------------------------

interface StepResult {
  stdout: string
  stderr: string
}

interface SessionRun {
  code: number | null
  /** What each step printed, by step index; steps after a failing one are missing. */
  results: StepResult[]
  stdout: string
  stderr: string
}

/** Runs the steps in one `bash` from the repository root, the CLI on `databaseUrl`. */
async function runSession(steps: Step[], databaseUrl: string): Promise<SessionRun> {
  // A marker no command prints, so cutting the output at it cannot split a step's own output.
  const marker = `@@readme-step-${randomBytes(6).toString('hex')}`
  const script = [
    'set -euo pipefail',
    // The leading newline ends the previous step's last line even when it printed no newline
    // (curl -s doesn't); it is removed again when the output is cut into steps.
    ...steps.flatMap((step, i) => [`printf '\\n%s\\n' '${marker} ${i}'; printf '\\n%s\\n' '${marker} ${i}' >&2`, step.command]),
  ].join('\n')
  const { code, stdout, stderr } = await bash(script, { PATH: process.env.PATH!, DATABASE_URL: databaseUrl })
  const outs = cut(stdout, marker)
  const errs = cut(stderr, marker)
  const results = outs.map((out, i) => ({ stdout: out, stderr: errs[i] ?? '' }))
  return { code, results, stdout, stderr }
}

/** The text after each marker line, up to the next one (the newline before a marker excluded). */
function cut(output: string, marker: string): string[] {
  const pieces = output.split(new RegExp(`\\n${marker} \\d+\\n`))
  return pieces.slice(1) // before the first marker: nothing
}

/** Runs `script` with bash from the repository root, with only `env` in its environment (as a fresh terminal would). */
const bash = (script: string, env: Record<string, string>) => runProcess('bash', ['-c', script], { env, cwd: ROOT })

// ---- The tests ---------------------------------------------------------------------------------

const README = readFileSync(join(ROOT, 'README.md'), 'utf8')
const SESSION = readmeSession(README)
const STEPS = SESSION === undefined ? [] : parseSteps(SESSION)
const oneLine = (command: string) => command.replace(/\\\n\s*/g, '')
const short = (command: string) => (oneLine(command).length > 70 ? `${oneLine(command).slice(0, 67)}...` : oneLine(command))

describe("The README's curl session", () => {
  const resources = useResources()
  let run: SessionRun

  before(async () => {
    if (SESSION === undefined) return
    const database = await resources.database(SQLITE)
    const server = await resources.server(database.url)
    // Same database for the server and the session's `npx petstore`, so the key made there works.
    run = await runSession(parseSteps(withPort(SESSION, server.port)), database.url)
  })

  /** What a failing step printed, for the assertion message. */
  const report = (i: number) => {
    if (i < 0) return 'its start'
    const { stdout, stderr } = run.results[i] ?? {}
    return `step ${i + 1}: ${oneLine(STEPS[i]!.command)}\n--- stdout:\n${stdout}\n--- stderr:\n${stderr}`
  }

  /** The step the session stopped at (the last one that started), for the assertion messages. */
  const stoppedAt = () => report(run.results.length - 1)

  test('When the README is read, then it has a shell session with a key and curl calls, whose steps show output', () => {
    assert.ok(SESSION, 'README.md has no ```sh block containing both `curl ` and `TOKEN=`')
    assert.ok(
      STEPS.some((s) => s.expected),
      'the session shows no expected output (comment lines right after a command)',
    )
  })

  test('When the session runs beside a server, then every step succeeds and none is refused with 401', () => {
    if (SESSION === undefined) return // the test above fails
    assert.equal(run.code, 0, `the session exited ${run.code} at ${stoppedAt()}`)
    assert.equal(run.results.length, STEPS.length, `not every step ran:\n${run.stdout}\n${run.stderr}`)
    for (const [i, result] of run.results.entries()) {
      assert.ok(!/unauthorized/.test(result.stdout + result.stderr), `a call was refused: ${report(i)}`)
    }
  })

  STEPS.forEach((step, i) => {
    if (step.expected === undefined) return // checked by the test above: it must succeed
    test(`When step ${i + 1} (\`${short(step.command)}\`) runs, then it prints what the README shows`, () => {
      const result = run.results[i]
      assert.ok(result, `step ${i + 1} never ran: the session exited ${run.code} at ${stoppedAt()}`)
      assert.ok(matchesExpected(result.stdout, step.expected!), `${report(i)}\n--- the README shows:\n${step.expected!.join('\n')}`)
    })
  })
})

describe("The README's CLI after a build", () => {
  const resources = useResources()

  // `npm run build` empties dist/, where this very test runs from, so it cannot rebuild here.
  // What a rebuild used to break is the bin's execute bit (tsc writes files without it, and npx
  // runs the bin directly); scripts/copy-assets.mjs sets it at the end of every build. Under
  // `npm test` the build has just run, so the mode read at load time is the build's own.
  test('When the project has been built, then the bin is executable by everyone', () => {
    const mode = BIN_MODE_AFTER_BUILD & 0o777
    assert.equal(mode & 0o111, 0o111, `dist/src/cli.js has mode ${mode.toString(8)} after the build`)
  })

  // A fresh database with no server ever started on it: the README's CLI commands must work
  // before `npm start` too, whatever order a user runs them in.
  test('When `npx petstore keys list` runs from the repository root, then it lists keys under a header', async () => {
    const database = await resources.database(SQLITE)
    const { code, stdout, stderr } = await bash('npx petstore keys list', {
      PATH: process.env.PATH!,
      DATABASE_URL: database.url,
    })
    assert.equal(code, 0, stderr)
    assert.match(stdout.split('\n')[0]!, /^ID\b/, stdout)
  })
})

// The parsing rule itself, on a small session, so a change to it is deliberate.
describe('Reading steps out of a README session', () => {
  test('When comment lines follow a command directly, then they are its expected output, and others are descriptions', () => {
    const steps = parseSteps(
      ['# a description', 'A=$(echo 1)', '', '# another description', 'echo a \\', '  b', '# a b', '#', '# [1,…]', 'true'].join('\n'),
    )
    assert.deepEqual(steps, [
      { command: 'A=$(echo 1)', expected: undefined },
      { command: 'echo a \\\n  b', expected: ['a b', '', '[1,…]'] },
      { command: 'true', expected: undefined },
    ])
  })

  test('When an expected output has `…`, then it matches any text there and nothing else differs', () => {
    assert.ok(matchesExpected('[1,2,3]', ['[1,…,3]']))
    assert.ok(matchesExpected('[1,3]', ['[1,…3]']))
    assert.ok(matchesExpected('a\nb\nc\n', ['a', '…', 'c']))
    assert.ok(!matchesExpected('[1,2,4]', ['[1,…,3]']))
    assert.ok(!matchesExpected('{"a":1} ', ['{"a":1}']))
    assert.ok(!matchesExpected('x.y', ['x…z']))
    assert.ok(!matchesExpected('xay', ['x.y']), 'other characters are literal')
  })
})
