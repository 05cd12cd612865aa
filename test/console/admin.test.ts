// The console's admin pages in Debian's Chromium, against a live service on each backend: an admin
// creates a key with chosen scopes, sees and copies its token once, and revokes it; subscribes a
// webhook, sees it disabled when its endpoint refuses, re-enables and removes it; reads who calls the
// deprecated lookup. Other keys see none of these pages.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { createClient, PetstoreError } from 'petstore-client'
import { browserUnavailable, launchBrowser } from '../support/browser.js'
import { BACKENDS, createKey, useSuite } from '../support/helpers.js'
import { BROKER_ENV, TestExchange } from '../webhooks/brokers.js'
import { openConsole, settledTable, signIn } from './console-page.js'

const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/console/', import.meta.url))
const skip = browserUnavailable()

for (const backend of BACKENDS) {
  describe(`console admin pages (${backend.name})`, { skip }, () => {
    const suite = useSuite(backend, {
      seed: [{ petId: 1, quantity: 1, status: 'available' }],
      // Deliveries to 127.0.0.1 allowed, a schedule that runs out at once, the report flushed often.
      env: {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_RETRY_SCHEDULE: '100ms',
        WEBHOOK_TIMEOUT_MS: '500',
        DEPRECATED_CALLS_FLUSH_MS: '100',
        ...BROKER_ENV,
      },
    })
    let browser: Browser
    before(async () => {
      browser = await launchBrowser()
      mkdirSync(ARTIFACTS, { recursive: true })
    })
    after(async () => browser?.close())
    const client = (token: string) => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token })

    test('When an admin creates a key with two scopes, copies its token and later revokes it, then the token works with exactly those scopes, then not at all', async () => {
      const { context, page, problems } = await openConsole(browser, suite.server.baseUrl)
      try {
        await context.grantPermissions(['clipboard-read', 'clipboard-write'])
        await signIn(page, suite.token)
        await page.getByRole('link', { name: 'Keys' }).click()
        await settledTable(page, 'Keys')
        await page.getByLabel('Name').fill('pos-1')
        await page.getByRole('checkbox', { name: 'orders:read' }).check()
        await page.getByRole('button', { name: 'Create key' }).click()
        const token = await page.getByLabel('Token').inputValue()
        assert.match(token, /^psk_/)
        await page.getByRole('button', { name: 'Copy' }).click()
        await page.getByRole('button', { name: 'Copied' }).waitFor()
        assert.equal(await page.evaluate(() => navigator.clipboard.readText()), token)
        assert.deepEqual((await client(token).keys.current()).scopes, ['inventory:read', 'orders:read'])
        await (await settledTable(page, 'Keys')).getByText('pos-1', { exact: true }).waitFor()

        await page.getByRole('button', { name: 'Revoke pos-1' }).click()
        await page.getByRole('button', { name: 'Confirm revoking pos-1' }).click()
        await page.getByRole('button', { name: 'Revoke pos-1' }).waitFor({ state: 'detached' })
        const refused = await client(token)
          .keys.current()
          .catch((e: unknown) => e)
        assert.ok(refused instanceof PetstoreError && refused.status === 401, String(refused))
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When a webhook is added for an endpoint that refuses, then its secret is shown once, it is shown disabled with why, and once re-enabled it delivers again and can be removed', async () => {
      const { context, page, problems } = await openConsole(browser, suite.server.baseUrl)
      // An endpoint that answers 503 until it is told to accept: re-enabling must then deliver, not
      // race the retry schedule back to disabled.
      let accepting = false
      const endpoint = http.createServer((req, res) => {
        req.resume()
        res.writeHead(accepting ? 204 : 503).end()
      })
      await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve))
      try {
        await signIn(page, suite.token)
        await page.getByRole('link', { name: 'Webhooks' }).click()
        await settledTable(page, 'Webhooks')
        const url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/petstore`
        await page.getByLabel('URL').fill(url)
        await page.getByLabel('Description').fill('refused on purpose')
        await page.getByRole('button', { name: 'Add webhook' }).click()
        assert.match(await page.getByLabel('Secret').inputValue(), /^whsec_/)
        await client(suite.token).inventory.set(1n, { quantity: 2 })
        // The schedule runs out after one retry: the page shows it disabled once read again.
        const deadline = performance.now() + 10_000
        while ((await client(suite.token).webhooks.list())[0]?.state !== 'disabled') {
          assert.ok(performance.now() < deadline, 'the subscription is disabled within 10 s')
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        await page.reload()
        const table = await settledTable(page, 'Webhooks')
        await table.getByText('disabled', { exact: true }).waitFor()
        const why = (await table.locator('tbody tr td:nth-child(5)').textContent()) ?? ''
        assert.match(why, /HTTP 503/, 'the page says why')
        accepting = true
        await page.getByRole('button', { name: `Re-enable ${url}` }).click()
        await page.getByRole('button', { name: `Re-enable ${url}` }).waitFor({ state: 'detached' })
        // The message that failed goes first, and now arrives: the cursor moves, the state is active.
        const resumed = performance.now() + 10_000
        for (;;) {
          const [hook] = await client(suite.token).webhooks.list()
          if (hook?.state === 'active' && hook.deliveredThrough > 0n) break
          assert.ok(performance.now() < resumed, `delivering again within 10 s (${hook?.state})`)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        await page.getByRole('button', { name: `Remove ${url}` }).click()
        await page.getByRole('button', { name: `Confirm removing ${url}` }).click()
        await page.getByRole('button', { name: `Remove ${url}` }).waitFor({ state: 'detached' })
        assert.deepEqual(await client(suite.token).webhooks.list(), [])
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
        endpoint.closeAllConnections()
        await new Promise((resolve) => endpoint.close(resolve))
      }
    })

    test('When an admin adds a RabbitMQ subscription with a password, then the page says where it publishes, never shows the password, and the queue gets the next change', async () => {
      const exchange = await TestExchange.open()
      const { context, page, problems } = await openConsole(browser, suite.server.baseUrl)
      try {
        await signIn(page, suite.token)
        await page.getByRole('link', { name: 'Webhooks' }).click()
        await settledTable(page, 'Webhooks')
        await page.getByLabel('URL').fill(exchange.url('guest'))
        await page.getByRole('button', { name: 'Add webhook' }).click()
        const masked = exchange.url('***')
        await page.getByRole('status').getByText(`Publishing into ${masked}`).waitFor()
        assert.equal(await page.getByLabel('Secret').count(), 0, 'no signing secret for a broker')
        const table = await settledTable(page, 'Webhooks')
        await table.getByText(masked).waitFor()
        await client(suite.token).inventory.set(1n, { quantity: 7 })
        const deadline = performance.now() + 10_000
        while (exchange.received.length === 0) {
          assert.ok(performance.now() < deadline, 'the change is published within 10 s')
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        assert.match(exchange.received[0]!.body, /"quantity":7/)
        await page.screenshot({ path: `${ARTIFACTS}webhooks-broker-${backend.name}.png`, fullPage: true })
        assert.doesNotMatch(await page.content(), /guest:guest/, 'the password is in no part of the page')
        await page.getByRole('button', { name: `Remove ${masked}` }).click()
        await page.getByRole('button', { name: `Confirm removing ${masked}` }).click()
        await page.getByRole('button', { name: `Remove ${masked}` }).waitFor({ state: 'detached' })
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
        await exchange.close()
      }
    })

    test('When a key calls the deprecated pet lookup, then the Deprecations page lists it with its calls', async () => {
      const legacy = await createKey(suite.database.url, 'legacy-shop', ['pets:read'])
      for (let i = 0; i < 3; i++) await fetch(`${suite.server.baseUrl}/v1/pets/1`, { headers: { authorization: `Bearer ${legacy}` } })
      const deadline = performance.now() + 10_000
      while (!(await client(suite.token).deprecations.list()).some((r) => r.name === 'legacy-shop' && r.calls === 3)) {
        assert.ok(performance.now() < deadline, 'the calls are flushed within 10 s')
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const { context, page } = await openConsole(browser, suite.server.baseUrl)
      try {
        await signIn(page, suite.token)
        await page.getByRole('link', { name: 'Deprecations' }).click()
        const table = page.getByRole('table', { name: 'Deprecations' })
        const row = table.locator('tbody tr', { hasText: 'legacy-shop' })
        await row.waitFor()
        assert.equal(await row.locator('td:nth-child(3)').textContent(), '3')
      } finally {
        await context.close()
      }
    })

    test('When a key without admin signs in, then there are no Keys, Webhooks or Deprecations links, and their addresses show the Stock page', async () => {
      const staff = await createKey(suite.database.url, 'staff', ['inventory:read', 'inventory:write'])
      const { context, page } = await openConsole(browser, suite.server.baseUrl)
      try {
        await signIn(page, staff)
        await settledTable(page, 'Stock')
        for (const name of ['Keys', 'Webhooks', 'Deprecations']) assert.equal(await page.getByRole('link', { name }).count(), 0, name)
        await page.goto(`${suite.server.baseUrl}/console/#/keys`)
        await settledTable(page, 'Stock')
        assert.equal(await page.getByRole('table', { name: 'Keys' }).count(), 0)
      } finally {
        await context.close()
      }
    })

    // Each admin page with something in it, for the screenshots: a legacy key's call, a webhook
    // disabled with why (its row the widest), a new key's token (made on the page itself).
    const NARROW_URL = 'http://127.0.0.1:9/a-rather-long-path/for-a-narrow-screen/petstore-webhook'
    let crowded: Promise<void> | undefined
    const crowd = () =>
      (crowded ??= (async () => {
        const legacy = await createKey(suite.database.url, 'legacy-narrow', ['pets:read'])
        await fetch(`${suite.server.baseUrl}/v1/pets/1`, { headers: { authorization: `Bearer ${legacy}` } })
        await client(suite.token).webhooks.create({ url: NARROW_URL, description: 'refused on purpose, to show why' })
        await client(suite.token).inventory.set(1n, { quantity: 5 })
        const deadline = performance.now() + 10_000
        while (
          (await client(suite.token).webhooks.list()).find((w) => w.url === NARROW_URL)?.state !== 'disabled' ||
          !(await client(suite.token).deprecations.list()).some((r) => r.name === 'legacy-narrow')
        ) {
          assert.ok(performance.now() < deadline, 'the webhook is disabled and the call reported within 10 s')
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      })())
    const pageWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth)

    test('When the admin pages are shown 1280 and 390 pixels wide, then at 390 no page is wider than the window', async () => {
      await crowd()
      for (const width of [1280, 390]) {
        const { context, page, problems } = await openConsole(browser, suite.server.baseUrl, width)
        try {
          await signIn(page, suite.token)
          await page.getByRole('link', { name: 'Keys' }).click()
          await settledTable(page, 'Keys')
          await page.getByLabel('Name').fill(`shown-at-${width}`)
          await page.getByRole('button', { name: 'Create key' }).click()
          await page.getByLabel('Token').waitFor()
          await (await settledTable(page, 'Keys')).getByText(`shown-at-${width}`, { exact: true }).waitFor()
          for (const name of ['Keys', 'Webhooks', 'Deprecations']) {
            await page.getByRole('link', { name }).click()
            const table = await settledTable(page, name)
            await table.locator('tbody tr').first().waitFor()
            await page.screenshot({ path: `${ARTIFACTS}${backend.name}-${name.toLowerCase()}-${width}.png`, fullPage: true })
            if (width === 390) {
              const wide = await pageWidth(page)
              assert.ok(wide <= 390, `the ${name} page is ${wide} pixels wide at 390`)
            }
          }
          assert.deepEqual(problems, [])
        } finally {
          await context.close()
        }
      }
    })

    test('When a webhook’s row would be wider than a 390-pixel window, then it is shown as a card: nothing scrolls sideways, its actions in view', async () => {
      await crowd()
      const { context, page } = await openConsole(browser, suite.server.baseUrl, 390)
      try {
        await signIn(page, suite.token)
        await page.getByRole('link', { name: 'Webhooks' }).click()
        const table = await settledTable(page, 'Webhooks')
        // Other tests' webhooks may be listed too: this one's row.
        const row = table.locator('tbody tr', { hasText: NARROW_URL })
        await row.getByText('disabled', { exact: true }).waitFor()
        const wide = await pageWidth(page)
        assert.ok(wide <= 390, `the Webhooks page is ${wide} pixels wide at 390`)
        const scroller = await page.locator('.table-scroll').evaluate((e) => [e.scrollWidth, e.clientWidth])
        assert.ok(scroller[0]! <= scroller[1]!, `the table does not scroll sideways (${scroller})`)
        const remove = await page.getByRole('button', { name: `Remove ${NARROW_URL}` }).boundingBox()
        assert.ok(remove && remove.x >= 0 && remove.x + remove.width <= 390, `Remove in view (${JSON.stringify(remove)})`)
        // Each value under its column's name.
        const labels = await table
          .locator('tbody tr')
          .first()
          .locator('td[data-label]')
          .evaluateAll((cells) => cells.map((c) => getComputedStyle(c, '::before').content))
        assert.deepEqual(labels, ['"URL"', '"State"', '"Delivered through"', '"Last success"', '"Why"'])
      } finally {
        await context.close()
      }
    })
  })
}
