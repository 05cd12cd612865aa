// WebhookStore, on every backend: a subscription starts at the ledger's end, at most `max` exist,
// one owner at a time holds a lease (until it expires or is released), the cursor and failures are
// written only by the lease's owner, a failure without a next attempt disables, enable clears it.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Webhook } from '../../src/domain.js'
import type { Storage } from '../../src/storage/ports.js'
import { BACKENDS, useStorage } from './backends.js'
import { actor, item, listItems, now, seed } from './fixtures.js'

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`

const newWebhook = (url = 'https://hooks.example.com/a', description: string | null = 'first') => ({
  url,
  description,
  secret: SECRET,
  messageTag: '0123456789abcdef',
  createdAt: now(),
})

async function create(storage: Storage, url?: string, max = 100): Promise<Webhook> {
  const webhook = await storage.createWebhook(newWebhook(url), max)
  assert.ok(webhook, 'created')
  return webhook
}

const later = (ms: number) => new Date(Date.now() + ms).toISOString()

for (const backend of BACKENDS) {
  describe(`Storage contract: webhooks (${backend.name})`, () => {
    const fixture = useStorage(backend)

    test('When a subscription is created, then its cursor is the ledger’s end and its delivery state is fresh', async () => {
      const { storage } = fixture
      const empty = await create(storage, 'https://hooks.example.com/empty')
      assert.equal(empty.deliveredThrough, 0n, 'an empty ledger ends at 0')
      await seed(storage, [item(1n, 1), item(2n, 2), item(3n, 3)])
      await storage.writeStock({ kind: 'set', petId: 2n, quantity: 9, actor: actor() })
      const end = await storage.lastChangeSeq()
      assert.equal(end, 4n)
      const webhook = await create(storage)
      assert.equal(typeof webhook.id, 'number')
      assert.deepEqual(
        { ...webhook, id: 0, createdAt: '' },
        {
          id: 0,
          url: 'https://hooks.example.com/a',
          description: 'first',
          createdAt: '',
          deliveredThrough: end,
          lastSuccessAt: null,
          failingSince: null,
          failedAttempts: 0,
          nextAttemptAt: null,
          lastError: null,
          disabledAt: null,
          disabledReason: null,
        },
      )
      assert.match(webhook.createdAt, ISO)
      assert.equal(typeof webhook.deliveredThrough, 'bigint')
      assert.deepEqual(await storage.getWebhook(webhook.id), webhook)
      assert.deepEqual(
        (await storage.listWebhooks()).map((w) => w.id),
        [empty.id, webhook.id],
        'listed by id',
      )
      assert.ok(!('secret' in webhook) && !('messageTag' in webhook), 'the secret is not in a subscription’s state')
      assert.ok((await storage.listWebhooks()).every((w) => !('secret' in w)))
    })

    test('When `max` subscriptions exist, then another is not created', async () => {
      const { storage } = fixture
      await create(storage, 'https://hooks.example.com/1', 2)
      await create(storage, 'https://hooks.example.com/2', 2)
      assert.equal(await storage.createWebhook(newWebhook('https://hooks.example.com/3'), 2), undefined)
      assert.equal((await storage.listWebhooks()).length, 2)
      // One fewer: room again.
      const [first] = await storage.listWebhooks()
      assert.equal(await storage.deleteWebhook(first!.id), true)
      await create(storage, 'https://hooks.example.com/4', 2)
      assert.equal((await storage.listWebhooks()).length, 2)
    })

    test('When one is deleted, then it is gone: get, enable and a second delete find nothing', async () => {
      const { storage } = fixture
      const webhook = await create(storage)
      assert.equal(await storage.deleteWebhook(webhook.id), true)
      assert.equal(await storage.deleteWebhook(webhook.id), false)
      assert.equal(await storage.getWebhook(webhook.id), undefined)
      assert.equal(await storage.enableWebhook(webhook.id, 0n, 0n), undefined)
      assert.deepEqual(await storage.listWebhooks(), [])
      assert.equal(await storage.recordDelivery(webhook.id, 'a', 1n, now()), false)
    })

    test('When two owners lease, then one holds each subscription (with its secret and tag) and the other gets nothing until it is released', async () => {
      const { storage } = fixture
      const other = await fixture.another()
      const w1 = await create(storage, 'https://hooks.example.com/1')
      const w2 = await create(storage, 'https://hooks.example.com/2')
      const held = await storage.leaseWebhooks('owner-a', 60_000)
      assert.deepEqual(
        held.map((w) => w.id),
        [w1.id, w2.id],
      )
      assert.equal(held[0]!.secret, SECRET)
      assert.equal(held[0]!.messageTag, '0123456789abcdef')
      assert.equal(held[0]!.deliveredThrough, 0n)
      assert.deepEqual(await other.leaseWebhooks('owner-b', 60_000), [], 'held by another, not expired')
      assert.deepEqual(
        (await storage.leaseWebhooks('owner-a', 60_000)).map((w) => w.id),
        [w1.id, w2.id],
        'the owner renews its own',
      )
      assert.deepEqual(await other.leaseWebhooks('owner-b', 60_000), [])
      // A subscription created now is free: the next lease, whoever takes it, gets it.
      const w3 = await create(storage, 'https://hooks.example.com/3')
      assert.deepEqual(
        (await other.leaseWebhooks('owner-b', 60_000)).map((w) => w.id),
        [w3.id],
      )
      assert.deepEqual(
        (await storage.leaseWebhooks('owner-a', 60_000)).map((w) => w.id),
        [w1.id, w2.id],
      )
      await storage.releaseWebhooks('owner-a')
      assert.deepEqual(
        (await other.leaseWebhooks('owner-b', 60_000)).map((w) => w.id),
        [w1.id, w2.id, w3.id],
        'released: taken at once',
      )
      assert.deepEqual(await storage.leaseWebhooks('owner-a', 60_000), [])
    })

    test('When a lease is not renewed, then another owner takes it once it expires, not before', async () => {
      const { storage } = fixture
      const other = await fixture.another()
      const webhook = await create(storage)
      const taken = Date.now()
      assert.equal((await storage.leaseWebhooks('owner-a', 1000)).length, 1)
      assert.deepEqual(await other.leaseWebhooks('owner-b', 1000), [], 'not expired yet')
      const deadline = Date.now() + 5000
      let took: number | undefined
      while (Date.now() < deadline) {
        const leased = await other.leaseWebhooks('owner-b', 60_000)
        if (leased.length > 0) {
          assert.deepEqual(
            leased.map((w) => w.id),
            [webhook.id],
          )
          took = Date.now()
          break
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      assert.ok(took !== undefined, 'taken over within 5 s')
      assert.ok(took - taken >= 900, `not before it expired (${took - taken} ms)`)
      assert.deepEqual(await storage.leaseWebhooks('owner-a', 1000), [], 'the old owner has lost it')
      assert.equal(await storage.recordDelivery(webhook.id, 'owner-a', 1n, now()), false, 'the old owner is fenced')
    })

    test('When a delivery is recorded, then only the lease’s owner moves the cursor, and only forward', async () => {
      const { storage } = fixture
      const other = await fixture.another()
      await seed(storage, [item(1n, 1)])
      const webhook = await create(storage)
      assert.equal(webhook.deliveredThrough, 1n)
      await storage.writeStock({ kind: 'set', petId: 1n, quantity: 2, actor: actor() })
      await storage.writeStock({ kind: 'set', petId: 1n, quantity: 3, actor: actor() })
      assert.equal(await storage.recordDelivery(webhook.id, 'owner-a', 2n, now()), false, 'no lease yet')
      await storage.leaseWebhooks('owner-a', 60_000)
      assert.equal(await other.recordDelivery(webhook.id, 'owner-b', 2n, now()), false, 'not the owner')
      assert.equal((await storage.getWebhook(webhook.id))!.deliveredThrough, 1n)
      const at = now()
      assert.equal(await storage.recordDelivery(webhook.id, 'owner-a', 2n, at), true)
      const after = (await storage.getWebhook(webhook.id))!
      assert.equal(after.deliveredThrough, 2n)
      assert.equal(after.lastSuccessAt, at)
      assert.equal(await storage.recordDelivery(webhook.id, 'owner-a', 2n, now()), false, 'not forward')
      assert.equal(await storage.recordDelivery(webhook.id, 'owner-a', 1n, now()), false, 'not backward')
      assert.equal((await storage.getWebhook(webhook.id))!.deliveredThrough, 2n)
      assert.equal(await storage.recordDelivery(webhook.id, 'owner-a', 3n, now()), true)
      assert.equal((await other.getWebhook(webhook.id))!.deliveredThrough, 3n, 'durable: another connection reads it')
    })

    test('When deliveries are recorded in the same moment as stock writes, then each gets its own answer, all are durable, and a delivery alone leaves the inventory’s version', async () => {
      const { storage } = fixture
      const other = await fixture.another()
      await seed(storage, [item(1n, 1), item(2n, 1)])
      const [a, b] = [await create(storage), await create(storage, 'https://hooks.example.com/b')]
      const end = a.deliveredThrough
      await storage.leaseWebhooks('owner-a', 60_000)
      await storage.writeStock({ kind: 'set', petId: 1n, quantity: 5, actor: actor() })
      const at = now()
      // Submitted in one turn: on SQLite they share one group commit.
      const [set, recorded, fenced, set2] = await Promise.all([
        storage.writeStock({ kind: 'set', petId: 2n, quantity: 6, actor: actor() }),
        storage.recordDelivery(a.id, 'owner-a', end + 1n, at),
        storage.recordDelivery(b.id, 'owner-b', end + 1n, at),
        storage.writeStock({ kind: 'set', petId: 1n, quantity: 7, actor: actor() }),
      ])
      assert.deepEqual(set, item(2n, 6))
      assert.deepEqual(set2, item(1n, 7))
      assert.equal(recorded, true)
      assert.equal(fenced, false, 'not the owner')
      assert.equal((await other.getWebhook(a.id))!.deliveredThrough, end + 1n, 'durable: another connection reads it')
      assert.equal((await other.getWebhook(a.id))!.lastSuccessAt, at)
      assert.equal((await other.getWebhook(b.id))!.deliveredThrough, end)
      assert.deepEqual(await listItems(other), [item(1n, 7), item(2n, 6)])
      const before = await storage.versions()
      assert.equal(await storage.recordDelivery(a.id, 'owner-a', end + 2n, now()), true)
      assert.deepEqual(await storage.versions(), before, 'a cursor is not an inventory write: the caches stay valid')
    })

    test('When failures are recorded, then only the owner’s count; a success clears them', async () => {
      const { storage } = fixture
      const other = await fixture.another()
      const webhook = await create(storage)
      await storage.leaseWebhooks('owner-a', 60_000)
      const first = now()
      const retry = later(5000)
      assert.equal(
        await other.recordFailure(webhook.id, 'owner-b', { at: first, error: 'HTTP 500', failedAttempts: 1, nextAttemptAt: retry }),
        false,
        'not the owner',
      )
      assert.equal((await storage.getWebhook(webhook.id))!.failedAttempts, 0)
      assert.equal(
        await storage.recordFailure(webhook.id, 'owner-a', { at: first, error: 'HTTP 500', failedAttempts: 1, nextAttemptAt: retry }),
        true,
      )
      const second = now()
      const retry2 = later(10_000)
      assert.equal(
        await storage.recordFailure(webhook.id, 'owner-a', {
          at: second,
          error: 'connection refused',
          failedAttempts: 2,
          nextAttemptAt: retry2,
        }),
        true,
      )
      assert.deepEqual(
        { ...(await storage.getWebhook(webhook.id))!, createdAt: '' },
        {
          ...webhook,
          createdAt: '',
          failingSince: first,
          failedAttempts: 2,
          nextAttemptAt: retry2,
          lastError: 'connection refused',
        },
        'failing since the first failure; the last error and next attempt',
      )
      assert.equal((await storage.leaseWebhooks('owner-a', 60_000)).length, 1, 'a failing subscription stays leased')
      await seed(storage, [item(1n, 1)])
      const ok = now()
      const seq = await storage.lastChangeSeq()
      assert.equal(await storage.recordDelivery(webhook.id, 'owner-a', seq, ok), true)
      const cleared = (await storage.getWebhook(webhook.id))!
      assert.deepEqual(
        [cleared.failingSince, cleared.failedAttempts, cleared.nextAttemptAt, cleared.lastError, cleared.lastSuccessAt],
        [null, 0, null, null, ok],
      )
    })

    test('When a failure has no next attempt, then the subscription is disabled, its lease given up, and no one leases it until enabled', async () => {
      const { storage } = fixture
      const other = await fixture.another()
      await seed(storage, [item(1n, 1)])
      const webhook = await create(storage)
      await storage.leaseWebhooks('owner-a', 60_000)
      const first = now()
      await storage.recordFailure(webhook.id, 'owner-a', { at: first, error: 'HTTP 503', failedAttempts: 1, nextAttemptAt: later(100) })
      const last = now()
      const reason = '2 attempts failed; the last: HTTP 503'
      assert.equal(await storage.recordFailure(webhook.id, 'owner-a', { at: last, error: reason, failedAttempts: 2 }), true)
      const disabled = (await storage.getWebhook(webhook.id))!
      assert.deepEqual(
        [disabled.disabledAt, disabled.disabledReason, disabled.failedAttempts, disabled.nextAttemptAt, disabled.failingSince],
        [last, reason, 2, null, first],
      )
      assert.equal(disabled.deliveredThrough, 1n, 'the cursor stays')
      assert.deepEqual(await storage.leaseWebhooks('owner-a', 60_000), [], 'not leased by its owner')
      assert.deepEqual(await other.leaseWebhooks('owner-b', 60_000), [], 'nor by another')
      assert.equal(await storage.recordDelivery(webhook.id, 'owner-a', 2n, now()), false, 'its lease is gone')

      const enabled = await other.enableWebhook(webhook.id, 0n, 99n)
      assert.ok(enabled)
      assert.deepEqual(
        [enabled.disabledAt, enabled.disabledReason, enabled.failedAttempts, enabled.nextAttemptAt, enabled.deliveredThrough],
        [null, null, 0, null, 1n],
        'enabled: not disabled, no failures counted, no retry waiting, the cursor where it was',
      )
      assert.deepEqual(await storage.getWebhook(webhook.id), enabled)
      assert.deepEqual(
        (await other.leaseWebhooks('owner-b', 60_000)).map((w) => w.id),
        [webhook.id],
        'leased again',
      )
    })

    test('When a failing (not disabled) subscription is enabled, then its retry is due now and its count cleared', async () => {
      const { storage } = fixture
      const webhook = await create(storage)
      await storage.leaseWebhooks('owner-a', 60_000)
      await storage.recordFailure(webhook.id, 'owner-a', { at: now(), error: 'HTTP 500', failedAttempts: 1, nextAttemptAt: later(60_000) })
      const enabled = (await storage.enableWebhook(webhook.id, 0n, 99n))!
      assert.deepEqual([enabled.failedAttempts, enabled.nextAttemptAt, enabled.disabledAt], [0, null, null])
      assert.equal(enabled.deliveredThrough, webhook.deliveredThrough, 'a cursor not before removed rows stays')
      // A cursor before rows retention removed moves to the end given.
      const moved = (await storage.enableWebhook(webhook.id, webhook.deliveredThrough + 1n, 2n ** 62n))!
      assert.equal(moved.deliveredThrough, 2n ** 62n)
      assert.equal((await storage.leaseWebhooks('owner-a', 60_000)).length, 1, 'the owner keeps its lease')
    })
  })
}
