// petstore-client as an integrator gets it: `npm pack` in client/ (its prepack compiling src/, in a
// checkout with or without client/dist), the tarball installed offline into an empty project, a
// script there using it against a live server (SQLite) with exact int64s and typed errors, and a
// consumer's TypeScript (and client/README.md's examples) type-checked against the installed
// declarations by the repository's compiler: right uses compile, wrong ones do not.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, delimiter, dirname, join, relative, sep } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { BACKENDS, createKey, useSuite } from '../support/helpers.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const CLIENT = join(ROOT, 'client')
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
const MAX = 9223372036854775807n
const STEP_MS = 30_000

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a program to its end (killed after STEP_MS), with only `env` as its environment. */
function run(command: string, args: string[], cwd: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: STEP_MS })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code, signal) =>
      resolve({ code: signal === null ? code : null, stdout, stderr: stderr + (signal ? `\n[${signal}]` : '') }),
    )
  })
}

/** Every file under `dir`, as paths relative to it with `/`. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort()
}

interface Packed {
  filename: string
  integrity: string
  files: string[]
}

describe('petstore-client, packed and installed into an empty project', () => {
  const sqlite = BACKENDS.find((b) => b.name === 'sqlite')!
  const suite = useSuite(sqlite, {
    seed: [
      { petId: 1, quantity: 10, status: 'available' },
      { petId: MAX, quantity: 10, status: 'available' },
    ],
  })
  let tmp = ''
  let app = ''
  /** npm without the variables of an `npm test` around it, with this Node first on PATH and a cache of its own. */
  let npmEnv: Record<string, string> = {}
  const packs: Record<'repository' | 'fresh' | 'stale', Packed> = {} as never

  const npm = async (args: string[], cwd: string) => {
    const result = await run('npm', args, cwd, npmEnv)
    assert.equal(result.code, 0, `npm ${args.join(' ')} in ${cwd}: ${result.stderr}`)
    return result
  }
  const pack = async (dir: string, ...extra: string[]): Promise<Packed> => {
    const destination = mkdtempSync(join(tmp, 'pack-'))
    const [answer] = JSON.parse((await npm(['pack', '--json', '--pack-destination', destination, ...extra], dir)).stdout)
    return {
      filename: join(destination, answer.filename),
      integrity: answer.integrity,
      files: answer.files.map((f: { path: string }) => f.path).sort(),
    }
  }

  before(async () => {
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'petstore-client-package-')))
    npmEnv = Object.fromEntries(
      Object.entries(process.env).filter((e): e is [string, string] => !e[0].startsWith('npm_') && e[1] !== undefined),
    )
    Object.assign(npmEnv, {
      PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}`,
      npm_config_cache: join(tmp, 'npm-cache'),
      npm_config_update_notifier: 'false',
    })
    // The repository's client/ as `npm run build` left it; its prepack is run in the copies below
    // rather than here, so no other test reading client/dist sees it rewritten.
    packs.repository = await pack(CLIENT, '--ignore-scripts')
    // Fresh checkouts (after `npm ci` at the root, which the prepack's tsc comes from): client/ without
    // dist, and with a dist left stale by an older build. The prepack must build each one.
    for (const which of ['fresh', 'stale'] as const) {
      const checkout = join(tmp, `checkout-${which}`)
      mkdirSync(checkout)
      symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'))
      cpSync(CLIENT, join(checkout, 'client'), {
        recursive: true,
        filter: (source) => !/[/\\](node_modules|dist)$/.test(source) || which === 'stale',
      })
      if (which === 'stale') writeFileSync(join(checkout, 'client', 'dist', 'index.js'), 'export const stale = true\n')
      packs[which] = await pack(join(checkout, 'client'))
    }
    // An empty project, and the tarball installed into it from the file alone (--offline, empty cache).
    app = join(tmp, 'app')
    mkdirSync(app)
    await npm(['init', '-y'], app)
    await npm(['pkg', 'set', 'type=module'], app)
    await npm(['install', packs.fresh.filename, '--no-audit', '--no-fund', '--offline'], app)
  })
  after(() => {
    if (tmp !== '') rmSync(tmp, { recursive: true, force: true })
  })

  test('When client/ is packed, then the tarball holds the compiled modules, their declarations, LICENSE, README.md and package.json, and nothing else', () => {
    const modules = files(join(CLIENT, 'src')).map((path) => path.replace(/\.ts$/, ''))
    assert.ok(modules.includes('index') && modules.includes('generated/openapi'), modules.join(' '))
    const expected = ['LICENSE', 'README.md', 'package.json', ...modules.flatMap((m) => [`dist/${m}.js`, `dist/${m}.d.ts`])].sort()
    // Nothing else: no src/, tsconfig, tests, strays, nor source maps (they name ../src/*.ts, which is not shipped).
    assert.deepEqual(packs.repository.files, expected)
    assert.equal(basename(packs.repository.filename), 'petstore-client-1.0.0.tgz')
    assert.ok(
      readFileSync(join(CLIENT, 'README.md'), 'utf8').includes('petstore-client-1.0.0.tgz'),
      'the README names the tarball npm pack writes',
    )
  })

  test('When a checkout without client/dist, or with a stale one, is packed, then its prepack builds the very same tarball', () => {
    // (Built from the same client/src: after editing it, `npm run build` before running this alone.)
    assert.equal(packs.fresh.integrity, packs.repository.integrity, 'without dist: the same bytes as the repository’s build')
    assert.equal(packs.stale.integrity, packs.repository.integrity, 'with a stale dist: rebuilt, the same bytes')
    assert.deepEqual(packs.fresh.files, packs.repository.files)
  })

  test('When the tarball is installed offline into an empty project, then the project holds exactly its files, and it has no dependencies', () => {
    const installed = join(app, 'node_modules', 'petstore-client')
    assert.deepEqual(files(installed), packs.fresh.files)
    assert.deepEqual(
      readdirSync(join(app, 'node_modules')).filter((name) => !name.startsWith('.')),
      ['petstore-client'],
    )
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'))
    assert.equal(manifest.type, 'module')
    assert.deepEqual(manifest.exports, { '.': { types: './dist/index.d.ts', default: './dist/index.js' } })
    assert.equal(manifest.engines.node, '>=22')
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies'])
      assert.equal(manifest[field], undefined, field)
  })

  test('When a script in that project uses the package against a live server, then int64s are exact, writes and orders work and errors are typed', async () => {
    const token = await createKey(suite.database.url, 'consumer', ['inventory:read', 'inventory:write', 'orders:read', 'orders:write'])
    writeFileSync(
      join(app, 'consumer.mjs'),
      `import { createClient, PetstoreConnectionError, PetstoreError } from 'petstore-client'

const MAX = 9223372036854775807n
const api = createClient({ baseUrl: process.env.BASE_URL, token: process.env.TOKEN })
const out = { resolved: import.meta.resolve('petstore-client') }

const items = await api.inventory.list()
out.listed = items.map((i) => String(i.petId))
out.exact = items.some((i) => i.petId === 9223372036854775807n)
out.paged = []
for await (const i of api.inventory.iterate({ pageSize: 1 })) out.paged.push(String(i.petId))

const { item, etag } = await api.inventory.get(MAX)
const set = await api.inventory.set(MAX, { quantity: item.quantity + 5, reason: 'arrival', note: 'crate 7' }, { ifMatch: etag })
out.set = { petId: set.item.petId === MAX, quantity: set.item.quantity, etagChanged: set.etag !== etag && set.etag.length > 0 }
try {
  await api.inventory.set(MAX, { quantity: 1, reason: 'count' }, { ifMatch: etag })
  out.staleEtag = 'applied'
} catch (err) {
  out.staleEtag = err instanceof PetstoreError ? err.status + ' ' + err.code : String(err)
}

const order = await api.orders.place({ petId: MAX, quantity: 2 })
const again = await api.orders.get(order.id)
out.order = { id: typeof order.id, petId: order.petId === MAX, quantity: order.quantity, status: order.status, same: again.id === order.id }
out.stockAfter = (await api.inventory.get(MAX)).item.quantity
out.ledger = []
for await (const c of api.changes.list({ petId: MAX })) out.ledger.push([c.reason, c.petId === MAX, c.orderId === (c.reason === 'order' ? order.id : null)])

try {
  await api.inventory.get(9007199254740993n)
  out.notFound = 'found'
} catch (err) {
  out.notFound = {
    typed: err instanceof PetstoreError && err.code === 'not_found' && typeof err.requestId === 'string',
    status: err.status,
    name: err.name,
  }
}
try {
  await api.keys.list()
} catch (err) {
  out.admin = err instanceof PetstoreError ? err.status + ' ' + err.code : String(err)
}
try {
  await createClient({ baseUrl: 'http://127.0.0.1:1/v1', token: 'none', maxRetries: 0 }).inventory.list()
} catch (err) {
  out.unreachable = err instanceof PetstoreConnectionError && !(err instanceof PetstoreError) ? err.name : String(err)
}
console.log(JSON.stringify(out))
`,
    )
    const result = await run(process.execPath, ['consumer.mjs'], app, {
      PATH: process.env.PATH!,
      BASE_URL: `${suite.server.baseUrl}/v1`,
      TOKEN: token,
    })
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stderr, '')
    const out = JSON.parse(result.stdout)
    assert.equal(
      out.resolved,
      pathToFileURL(join(app, 'node_modules', 'petstore-client', 'dist', 'index.js')).href,
      'the installed package',
    )
    assert.deepEqual(out.listed, ['1', '9223372036854775807'])
    assert.equal(out.exact, true, 'item.petId === 9223372036854775807n')
    assert.deepEqual(out.paged, ['1', '9223372036854775807'], 'a page each, following the Link')
    assert.deepEqual(out.set, { petId: true, quantity: 15, etagChanged: true })
    assert.equal(out.staleEtag, '412 precondition_failed')
    assert.deepEqual(out.order, { id: 'bigint', petId: true, quantity: 2, status: 'placed', same: true })
    assert.equal(out.stockAfter, 13)
    assert.deepEqual(out.ledger, [
      ['import', true, true],
      ['arrival', true, true],
      ['order', true, true],
    ])
    assert.deepEqual(out.notFound, { typed: true, status: 404, name: 'PetstoreError' })
    assert.equal(out.admin, '403 insufficient_scope')
    assert.equal(out.unreachable, 'PetstoreConnectionError')
  })

  test('When a consumer’s TypeScript is checked against the installed declarations (with the DOM library or Node’s types), then right uses compile and wrong ones fail', async () => {
    const tsconfig = (file: string, extra: object = {}) =>
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM'],
          types: [],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          ...extra,
        },
        files: [file],
      })
    writeFileSync(join(app, 'tsconfig.json'), tsconfig('right.ts'))
    writeFileSync(
      join(app, 'right.ts'),
      `import {
  createClient,
  type ErrorCode,
  type InventoryItem,
  type PetstoreClient,
  PetstoreConnectionError,
  PetstoreError,
  PetstoreUnknownOutcomeError,
  verifyWebhook,
  type WebhookMessage,
} from 'petstore-client'

const api: PetstoreClient = createClient({ baseUrl: 'http://127.0.0.1:8080/v1', token: () => 'key' })

export function explain(error: unknown): string {
  if (error instanceof PetstoreError) {
    switch (error.code) {
      case 'not_found':
        return 'no such pet'
      case 'precondition_failed':
        return 'changed since it was read'
      case 'rate_limited':
        return \`retry after \${error.retryAfter ?? '?'} s (\${error.requestId ?? 'no request id'})\`
      case 'invalid_response':
        return \`not the API: HTTP \${error.status}\`
      default: {
        const code: ErrorCode = error.code
        return code
      }
    }
  }
  if (error instanceof PetstoreUnknownOutcomeError) return 'maybe applied'
  if (error instanceof PetstoreConnectionError) return 'unreachable'
  return 'unknown'
}

export async function use(signal: AbortSignal): Promise<bigint> {
  const items: InventoryItem[] = await api.inventory.list({ status: 'available' })
  const { item, etag } = await api.inventory.get(9223372036854775807n)
  const set = await api.inventory.set(item.petId, { quantity: 1, reason: 'count', note: 'n' }, { ifMatch: etag, signal })
  const order = await api.orders.place({ petId: set.item.petId, quantity: 1 })
  await api.orders.update(order.id, { status: 'approved' })
  for await (const placed of api.orders.list({ status: 'placed', pageSize: 10 })) void placed.id
  let last: bigint = 0n
  for await (const change of api.changes.stream({ after: last, petId: 1n, signal })) last = change.seq
  const key = await api.keys.create({ name: 'pos-1', scopes: ['inventory:read'] })
  const hook = await api.webhooks.create({ url: 'https://example.com/hook' })
  const message: WebhookMessage = await verifyWebhook(hook.secret, new Headers(), new Uint8Array(), { toleranceSeconds: 60 })
  return order.id + message.data.petId + key.id + last + BigInt(items.length)
}
`,
    )
    // A Node project's usual settings too: no DOM library, Node's types (the repository's @types/node).
    writeFileSync(
      join(app, 'tsconfig.node.json'),
      tsconfig('right.ts', { lib: ['ES2022'], types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')] }),
    )
    writeFileSync(join(app, 'tsconfig.wrong.json'), tsconfig('wrong.ts'))
    const wrong = [
      `import { createClient, PetstoreError } from 'petstore-client'`,
      `const api = createClient({ baseUrl: 'http://127.0.0.1:8080/v1', token: 'key' })`,
      `export async function wrong(error: unknown): Promise<number> {`,
      /* 4 */ `  await api.inventory.get(1)`,
      /* 5 */ `  await api.orders.place({ petId: 1, quantity: 2 })`,
      /* 6 */ `  const n: number = (await api.inventory.list())[0]!.petId`,
      /* 7 */ `  await api.inventory.set(1n, { quantity: 1, reason: 'order' })`,
      `  if (error instanceof PetstoreError) {`,
      `    switch (error.code) {`,
      /* 10 */ `      case 'not_fund':`,
      `        return n`,
      `    }`,
      `  }`,
      `  return 0`,
      `}`,
    ]
    writeFileSync(join(app, 'wrong.ts'), `${wrong.join('\n')}\n`)
    const tsc = (project: string) =>
      run(process.execPath, [TSC, '-p', join(app, project), '--pretty', 'false'], app, { PATH: process.env.PATH! })
    const [right, node, failed] = await Promise.all([tsc('tsconfig.json'), tsc('tsconfig.node.json'), tsc('tsconfig.wrong.json')])
    assert.equal(right.code, 0, `right.ts compiles: ${right.stdout}${right.stderr}`)
    assert.equal(node.code, 0, `right.ts compiles without the DOM library: ${node.stdout}${node.stderr}`)
    assert.equal(failed.code, 2, `wrong.ts does not compile: ${failed.stdout}`)
    const errors = failed.stdout
      .split('\n')
      .filter((line) => line.startsWith('wrong.ts('))
      .map((line) => /^wrong\.ts\((\d+),\d+\): error (TS\d+): (.*)$/.exec(line)!)
      .map(([, line, code, text]) => ({ line: Number(line), code, text: text! }))
    assert.deepEqual(
      errors.map((e) => [e.line, e.code]),
      [
        [4, 'TS2345'],
        [5, 'TS2322'],
        [6, 'TS2322'],
        [7, 'TS2322'],
        [10, 'TS2678'],
      ],
      failed.stdout,
    )
    assert.match(errors[0]!.text, /Argument of type 'number' is not assignable to parameter of type 'bigint'/)
    assert.match(errors[1]!.text, /Type 'number' is not assignable to type 'bigint'/)
    assert.match(errors[2]!.text, /Type 'bigint' is not assignable to type 'number'/)
    assert.match(
      errors[3]!.text,
      /Type '"order"' is not assignable to type '"adjustment" \| "arrival" \| "return" \| "count" \| "damage" \| "loss" \| undefined'/,
    )
    assert.match(errors[4]!.text, /Type '"not_fund"' is not comparable to type '.*"not_found".*'/)
  })

  test('When the TypeScript examples of client/README.md and README.md are checked against the installed package, then they compile', async () => {
    const blocks = [join(CLIENT, 'README.md'), join(ROOT, 'README.md')].flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!),
    )
    assert.ok(blocks.length >= 9, `the READMEs' ts blocks (${blocks.length})`)
    const names = blocks.map((block, n) => {
      const name = `readme-${n + 1}.ts`
      // A block that does not make its own client uses the quick start's `api`.
      const context = /\bconst api\b/.test(block)
        ? ''
        : `import type { PetstoreClient } from 'petstore-client'\ndeclare const api: PetstoreClient\n`
      writeFileSync(join(app, name), `${context}${block}export {}\n`)
      return name
    })
    writeFileSync(
      join(app, 'tsconfig.readme.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM'],
          // The webhook example is a node:http server: the repository's @types/node.
          typeRoots: [join(ROOT, 'node_modules', '@types')],
          types: ['node'],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
        },
        files: names,
      }),
    )
    const result = await run(process.execPath, [TSC, '-p', join(app, 'tsconfig.readme.json'), '--pretty', 'false'], app, {
      PATH: process.env.PATH!,
    })
    assert.equal(result.code, 0, `the README's examples compile:\n${result.stdout}`)
  })
})
