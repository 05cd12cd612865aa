// The CPU guard's baseline (bench/baseline-build.ts): a checkout that cannot name or reach the pinned
// commit is an error that says why, never a pass. Real git repositories in temporary folders.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { pinnedCommit, prepareBaseline } from '../../bench/baseline-build.js'

const dirs: string[] = []
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-c', 'user.name=guard test', '-c', 'user.email=guard@test', ...args], { cwd, encoding: 'utf8' }).trim()

/** A repository with two commits on main; returns it and both commit ids. */
function repository(): { dir: string; first: string; second: string } {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-guard-repo-'))
  dirs.push(dir)
  git(dir, 'init', '-q', '-b', 'main')
  mkdirSync(join(dir, 'bench'))
  writeFileSync(join(dir, 'a.txt'), 'one\n')
  git(dir, 'add', '.')
  git(dir, 'commit', '-q', '-m', 'first')
  const first = git(dir, 'rev-parse', 'HEAD')
  writeFileSync(join(dir, 'a.txt'), 'two\n')
  git(dir, 'commit', '-q', '-am', 'second')
  return { dir, first, second: git(dir, 'rev-parse', 'HEAD') }
}

const pin = (dir: string, text: string): void => writeFileSync(join(dir, 'bench/baseline'), text)
const quiet = (): void => {}

describe('the CPU guard baseline', () => {
  test('When bench/baseline names its commit after comments, then that commit is read', async () => {
    const { dir, first } = repository()
    pin(dir, `# why this commit\n\n${first}\n`)
    assert.equal(await pinnedCommit(dir), first)
  })

  test('When bench/baseline holds no full commit id, then the guard stops and says what it holds', async () => {
    const { dir, first } = repository()
    pin(dir, `${first.slice(0, 12)}\n`)
    await assert.rejects(pinnedCommit(dir), /40-hex-digit id; it holds "[0-9a-f]{12}"/)
  })

  test('When the commit is not in the history, then preparing the baseline fails and names the commit', async () => {
    const { dir } = repository()
    const absent = 'f'.repeat(40)
    pin(dir, `${absent}\n`)
    await assert.rejects(prepareBaseline(dir, quiet), new RegExp(`${absent} \\(bench/baseline\\) is not in this checkout's history$`))
  })

  test('When the checkout is a shallow clone without the commit, then the failure says to fetch the history', async () => {
    const { dir, first } = repository()
    pin(dir, `${first}\n`)
    git(dir, 'add', '.')
    git(dir, 'commit', '-q', '-m', 'pin the baseline')
    const shallow = mkdtempSync(join(tmpdir(), 'petstore-guard-shallow-'))
    dirs.push(shallow)
    git(shallow, 'clone', '-q', '--depth', '1', `file://${dir}`, 'clone')
    await assert.rejects(prepareBaseline(join(shallow, 'clone'), quiet), /shallow clone; fetch the history \(git fetch --unshallow\)/)
  })

  test('When the commit is on another branch, not an ancestor of HEAD, then preparing the baseline fails and says so', async () => {
    const { dir, first } = repository()
    git(dir, 'checkout', '-q', '-b', 'side', first)
    writeFileSync(join(dir, 'a.txt'), 'side\n')
    git(dir, 'commit', '-q', '-am', 'side')
    const side = git(dir, 'rev-parse', 'HEAD')
    git(dir, 'checkout', '-q', 'main')
    pin(dir, `${side}\n`)
    await assert.rejects(prepareBaseline(dir, quiet), /is not an ancestor of HEAD/)
  })
})
