// The pinned earlier build the CPU guard judges each build against: the commit bench/baseline names,
// taken from this checkout's own history (git archive), built beside it in .tools/guard-baseline/,
// and kept there for the next run. A checkout that lacks the commit, or whose HEAD does not descend
// from it, cannot be judged: that is an error, never a pass.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/** Bound on each step (git, npm ci, the build): a registry that hangs fails the guard, it does not stall CI. */
const STEP_TIMEOUT_MS = 600_000

export interface Baseline {
  commit: string
  /** The baseline's `dist/src/cli.js`. */
  cli: string
}

function run(command: string, args: readonly string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd, timeout: STEP_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 256 * 1024 * 1024, encoding: 'buffer' },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${command} ${args.join(' ')} failed in ${cwd}: ${error.message}\n${stderr.toString().slice(-4000)}`))
        else resolve(stdout.toString('latin1'))
      },
    )
  })
}

/** The commit bench/baseline names: its first line that is neither blank nor a # comment. */
export async function pinnedCommit(root: string): Promise<string> {
  const file = join(root, 'bench/baseline')
  const line = (await readFile(file, 'utf8'))
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '' && !l.startsWith('#'))
  if (line === undefined || !/^[0-9a-f]{40}$/.test(line)) {
    throw new Error(`bench/baseline must name the baseline commit by its 40-hex-digit id; it holds ${JSON.stringify(line ?? '')}`)
  }
  return line
}

/** Throws, saying why, unless `commit` is in this checkout's history and HEAD descends from it. */
async function checkHistory(root: string, commit: string): Promise<void> {
  try {
    await run('git', ['cat-file', '-e', `${commit}^{commit}`], root)
  } catch {
    const shallow = (await run('git', ['rev-parse', '--is-shallow-repository'], root).catch(() => '')).trim() === 'true'
    throw new Error(
      `the baseline commit ${commit} (bench/baseline) is not in this checkout's history` +
        (shallow ? ': this is a shallow clone; fetch the history (git fetch --unshallow) and run again' : ''),
    )
  }
  try {
    await run('git', ['merge-base', '--is-ancestor', commit, 'HEAD'], root)
  } catch {
    throw new Error(
      `the baseline commit ${commit} (bench/baseline) is not an ancestor of HEAD: move bench/baseline to a commit of this branch`,
    )
  }
}

/**
 * The baseline's node_modules: when its package-lock.json is this checkout's, a folder of links to
 * this checkout's packages (nothing installed, nothing downloaded), but for the packages the lock
 * installs from the baseline's own tree (`file:` dependencies such as the client), linked there;
 * otherwise `npm ci` in the baseline's folder.
 */
async function installDependencies(root: string, dir: string, log: (line: string) => void): Promise<void> {
  const [ours, theirs] = await Promise.all([readFile(join(root, 'package-lock.json')), readFile(join(dir, 'package-lock.json'))])
  if (!ours.equals(theirs)) {
    log(`the baseline's package-lock.json differs from this checkout's: npm ci in ${dir}`)
    await run('npm', ['ci', '--no-audit', '--no-fund'], dir)
    return
  }
  const lock = JSON.parse(theirs.toString('utf8')) as { packages?: Record<string, { link?: boolean; resolved?: string }> }
  const local = new Map<string, string>()
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    if (entry.link === true && entry.resolved !== undefined && path.startsWith('node_modules/')) local.set(path.slice(13), entry.resolved)
  }
  const modules = join(dir, 'node_modules')
  await mkdir(modules)
  for (const name of await readdir(join(root, 'node_modules'))) {
    if (name.startsWith('@')) {
      await mkdir(join(modules, name))
      for (const scoped of await readdir(join(root, 'node_modules', name))) {
        const full = `${name}/${scoped}`
        await symlink(local.has(full) ? join(dir, local.get(full)!) : join(root, 'node_modules', full), join(modules, full))
      }
    } else {
      await symlink(local.has(name) ? join(dir, local.get(name)!) : join(root, 'node_modules', name), join(modules, name))
    }
  }
}

/** The baseline's CLI (bench/baseline), built once per commit (prepareBuild). */
export async function prepareBaseline(root: string, log: (line: string) => void): Promise<Baseline> {
  return prepareBuild(root, await pinnedCommit(root), log)
}

/**
 * The CLI of an earlier commit of this branch (the guard's baseline, a previous release beside this
 * one in an upgrade test), built once per commit: its tree from `git archive`, its dependencies, then
 * its own `npm run build`. A folder whose build did not finish (no marker) is made again.
 */
export async function prepareBuild(root: string, commit: string, log: (line: string) => void): Promise<Baseline> {
  await checkHistory(root, commit)
  const dir = join(root, '.tools/guard-baseline', commit)
  const cli = join(dir, 'dist/src/cli.js')
  const marker = join(dir, '.built')
  if (existsSync(marker) && existsSync(cli)) {
    log(`baseline ${commit.slice(0, 12)}: built already in ${dir}`)
    return { commit, cli }
  }
  const started = Date.now()
  await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { recursive: true })
  const archive = join(dir, '..', `${commit}.tar`)
  await run('git', ['archive', '--format=tar', '-o', archive, commit], root)
  await run('tar', ['-xf', archive, '-C', dir], root)
  await rm(archive)
  await installDependencies(root, dir, log)
  await run('npm', ['run', 'build', '--silent'], dir)
  await writeFile(marker, `${new Date().toISOString()}\n`)
  log(`baseline ${commit.slice(0, 12)}: built in ${dir} (${((Date.now() - started) / 1000).toFixed(0)} s)`)
  return { commit, cli }
}
