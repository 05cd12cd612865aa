import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { after, describe, test } from 'node:test'
import { Spool } from '../../src/cache/spool.js'

const readAll = async (stream: Readable) => {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))
/** The files this process holds open that were unlinked from `dir` (how /proc names them). */
const openDeleted = (dir: string) =>
  readdirSync('/proc/self/fd')
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`)
      } catch {
        return ''
      }
    })
    .filter((target) => target.startsWith(dir) && target.endsWith('(deleted)'))

/** Closing is asynchronous: waits (boundedly) for the open spool files in `dir` to number `count`. */
async function expectOpen(dir: string, count: number, message?: string) {
  for (let i = 0; i < 100 && openDeleted(dir).length !== count; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  assert.equal(openDeleted(dir).length, count, message)
}

describe('Spool: large bytes in an unlinked temporary file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-spool-test-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  test('When bytes are appended, then every reader streams all of them, concurrently, and no file name is left', async () => {
    const spool = await Spool.create(dir)
    const parts = Array.from({ length: 50 }, (_, i) => Buffer.alloc(40_000 + i, i))
    for (const part of parts) await spool.append(part)
    const expected = Buffer.concat(parts)
    assert.equal(spool.length, expected.length)
    assert.deepEqual(readdirSync(dir), [])
    const read = await Promise.all([readAll(spool.stream()), readAll(spool.stream()), readAll(spool.stream())])
    for (const bytes of read) assert.ok(bytes.equals(expected))
    spool.retire()
    await expectOpen(dir, 0)
  })

  test('When readers are destroyed midway (clients gone), then the file stays open: readers at the same time and later ones get every byte', async () => {
    const spool = await Spool.create(dir)
    const expected = Buffer.alloc(3 * 1024 * 1024, 5)
    await spool.append(expected)
    const whole = readAll(spool.stream())
    for (let i = 0; i < 20; i++) {
      const dropped = spool.stream()
      await new Promise((resolve) => dropped.once('data', resolve))
      dropped.destroy()
    }
    assert.ok((await whole).equals(expected))
    assert.ok((await readAll(spool.stream())).equals(expected), 'a reader after them')
    assert.equal(openDeleted(dir).length, 1, 'open until retired')
    spool.retire()
    await expectOpen(dir, 0)
  })

  test('When a spool is retired while a reader streams it, then that reader finishes, and the file closes after it', async () => {
    const spool = await Spool.create(dir)
    const expected = Buffer.alloc(3 * 1024 * 1024, 7)
    await spool.append(expected)
    const reader = spool.stream()
    spool.retire()
    await nextTurn()
    await nextTurn()
    assert.equal(openDeleted(dir).length, 1, 'still open for its reader')
    assert.ok((await readAll(reader)).equals(expected))
    await expectOpen(dir, 0)
    assert.throws(() => spool.stream(), /released/)
  })

  test('When a spool is retired with no reader, then a reader taken in the same turn still gets every byte', async () => {
    const spool = await Spool.create(dir)
    await spool.append(Buffer.from('[1,2,3]'))
    spool.retire()
    assert.equal((await readAll(spool.stream())).toString(), '[1,2,3]')
    await expectOpen(dir, 0)
  })

  test('When the directory cannot be written, then creating a spool fails and leaves nothing open', async () => {
    await assert.rejects(Spool.create(join(dir, 'missing')), { code: 'ENOENT' })
    assert.equal(openDeleted(dir).length, 0)
  })
})
