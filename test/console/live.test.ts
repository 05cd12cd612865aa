// Live changes in the console, in Debian's Chromium against `petstore serve` processes on each
// backend: a change made through the API or by another process (as the CLI writes) shows in the
// open Stock page without a reload; when the service goes away the page says it is disconnected,
// and once it is back the page resumes from the last change it saw, a change made meanwhile included.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { createClient } from 'petstore-client'
import { browserUnavailable, launchBrowser } from '../support/browser.js'
import { BACKENDS, createKey, seed, useResources } from '../support/helpers.js'
import { openConsole, settledTable, signIn } from './console-page.js'

const skip = browserUnavailable()

async function freePort(): Promise<string> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return String(port)
}

/** The Quantity cell of a pet's row in the Stock table, once it reads `quantity`. */
const quantityCell = (page: Page, petId: number, quantity: number) =>
  page
    .getByRole('table', { name: 'Stock', exact: true })
    .locator(`tbody tr:has(a[href="#/pets/${petId}"]) td:nth-child(2):text-is("${quantity}")`)

for (const backend of BACKENDS) {
  describe(`console live changes (${backend.name})`, { skip }, () => {
    const resources = useResources()
    let browser: Browser
    before(async () => {
      browser = await launchBrowser()
    })
    after(async () => browser?.close())

    test('When stock changes elsewhere, then the open page shows it without a reload, and across a restart of the service it resumes where it was', async (t) => {
      const db = await resources.database(backend)
      const token = await createKey(db.url, 'staff')
      await seed(
        db.url,
        [1, 2, 3].map((petId) => ({ petId, quantity: 10, status: 'available' })),
      )
      const port = await freePort()
      const first = await resources.server(db.url, { PORT: port })
      const api = createClient({ baseUrl: `http://127.0.0.1:${port}/v1`, token })
      const { context, page, problems } = await openConsole(browser, first.baseUrl)
      try {
        await signIn(page, token)
        await settledTable(page, 'Stock')
        const indicator = page.locator('.live')
        await indicator.getByText('Live', { exact: true }).waitFor()

        let started = performance.now()
        await api.inventory.set(2n, { quantity: 42 })
        await quantityCell(page, 2, 42).waitFor({ timeout: 5000 })
        t.diagnostic(`a change through the API shown after ${(performance.now() - started).toFixed(0)} ms`)

        // Another process writes, through the storage as `petstore import inventory` does.
        started = performance.now()
        await seed(db.url, [{ petId: 1, quantity: 5, status: 'available' }])
        await quantityCell(page, 1, 5).waitFor({ timeout: 5000 })
        t.diagnostic(`a change by another process shown after ${(performance.now() - started).toFixed(0)} ms`)

        await first.stop()
        await indicator.getByText('Disconnected: reconnecting…').waitFor({ timeout: 5000 })
        await seed(db.url, [{ petId: 3, quantity: 77, status: 'available' }])
        await resources.server(db.url, { PORT: port })
        await indicator.getByText('Live', { exact: true }).waitFor({ timeout: 20_000 })
        await quantityCell(page, 3, 77).waitFor({ timeout: 5000 })
        assert.equal(await quantityCell(page, 2, 42).count(), 1)

        // A pet's page follows its changes too: the newest row on top of its Changes table.
        await page.goto(`${first.baseUrl}/console/#/pets/2`)
        await page.getByRole('heading', { name: 'Pet 2' }).waitFor()
        await settledTable(page, 'Changes')
        await page.locator('.live').getByText('Live', { exact: true }).waitFor()
        await api.inventory.set(2n, { quantity: 43, reason: 'count' })
        await page
          .getByRole('table', { name: 'Changes', exact: true })
          .locator('tbody tr:first-child td:nth-child(4):text-is("43")')
          .waitFor({ timeout: 5000 })
        assert.deepEqual(
          problems.filter((p) => !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(p)),
          [],
          'no errors but the refused reconnections while the service was down',
        )
      } finally {
        await context.close()
      }
    })
  })
}
