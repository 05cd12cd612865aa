// The console's Orders page in Debian's Chromium, against a live service on each backend: an order
// from placement to delivery, a cancellation giving the stock back, a 409 in the API's words, and
// keys without the orders scopes.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { createClient } from 'petstore-client'
import { browserUnavailable, launchBrowser } from '../support/browser.js'
import { BACKENDS, createKey, useSuite } from '../support/helpers.js'
import { openConsole, settledTable, signIn } from './console-page.js'

const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/console/', import.meta.url))
const skip = browserUnavailable()

for (const backend of BACKENDS) {
  describe(`console orders (${backend.name})`, { skip }, () => {
    const suite = useSuite(backend, {
      seed: [
        { petId: 1, quantity: 10, status: 'available' },
        { petId: 2, quantity: 1, status: 'available' },
      ],
    })
    let browser: Browser
    before(async () => {
      browser = await launchBrowser()
      mkdirSync(ARTIFACTS, { recursive: true })
    })
    after(async () => browser?.close())
    const api = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })

    async function ordersPage(token: string, width = 1280) {
      const opened = await openConsole(browser, suite.server.baseUrl, width)
      await signIn(opened.page, token)
      await opened.page.getByRole('link', { name: 'Orders' }).click()
      await opened.page.getByRole('heading', { name: 'Orders' }).waitFor()
      return opened
    }
    const row = (page: Page, orderId: bigint) =>
      page
        .getByRole('table', { name: 'Orders', exact: true })
        .locator('tbody tr')
        .filter({ has: page.locator(`td:first-child:text-is("${orderId}")`) })
    const lastOrderId = async () => {
      let last: bigint | undefined
      for await (const order of api().orders.list()) last = order.id
      return last!
    }

    test('When an order is placed, approved and delivered from the page, then the API has it so at each step, and its stock was taken', async () => {
      const { context, page, problems } = await ordersPage(suite.token)
      try {
        await page.getByLabel('Pet ID').fill('1')
        await page.getByLabel('Quantity').fill('3')
        await page.getByRole('button', { name: 'Place order' }).click()
        await page
          .getByRole('status')
          .getByText(/placed: 3 of pet 1/)
          .waitFor()
        const id = await lastOrderId()
        assert.equal((await api().inventory.get(1n)).item.quantity, 7)
        await settledTable(page, 'Orders')
        await row(page, id).getByRole('button', { name: 'Approve' }).click()
        await row(page, id).getByText('approved').waitFor()
        assert.equal((await api().orders.get(id)).status, 'approved')
        await row(page, id).getByRole('button', { name: 'Deliver' }).click()
        await row(page, id).getByText('delivered').waitFor()
        assert.equal((await api().orders.get(id)).status, 'delivered')
        assert.equal(await row(page, id).getByRole('button').count(), 0, 'a delivered order moves no further')
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-orders-1280.png` })
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When an order is cancelled, then its stock comes back; when too much is asked, then the API’s 409 is shown and nothing is placed', async () => {
      const { context, page } = await ordersPage(suite.token, 390)
      try {
        await page.getByLabel('Pet ID').fill('1')
        await page.getByLabel('Quantity').fill('2')
        await page.getByRole('button', { name: 'Place order' }).click()
        await page
          .getByRole('status')
          .getByText(/placed: 2 of pet 1/)
          .waitFor()
        const id = await lastOrderId()
        const before = (await api().inventory.get(1n)).item.quantity
        await settledTable(page, 'Orders')
        await row(page, id).getByRole('button', { name: 'Cancel' }).click()
        await row(page, id).getByText('cancelled').waitFor()
        assert.equal((await api().inventory.get(1n)).item.quantity, before + 2)

        await page.getByLabel('Pet ID').fill('2')
        await page.getByLabel('Quantity').fill('5')
        await page.getByRole('button', { name: 'Place order' }).click()
        const alert = page.getByRole('alert')
        await alert.waitFor()
        assert.match((await alert.textContent()) ?? '', /stock/i)
        assert.equal(await lastOrderId(), id, 'no order was placed')
        assert.equal((await api().inventory.get(2n)).item.quantity, 1)
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-orders-390.png` })
      } finally {
        await context.close()
      }
    })

    test('When a key may read orders but not write them, then placing and moving are disabled and say why; without orders:read the page says what is missing', async () => {
      const reader = await createKey(suite.database.url, 'orders-reader', ['orders:read', 'inventory:read'])
      const { context, page } = await ordersPage(reader)
      try {
        const place = page.getByRole('button', { name: 'Place order' })
        assert.equal(await place.getAttribute('aria-disabled'), 'true')
        assert.match((await page.locator(`#${await place.getAttribute('aria-describedby')}`).textContent()) ?? '', /orders:write/)
      } finally {
        await context.close()
      }
      const stockOnly = await createKey(suite.database.url, 'stock-only', ['inventory:read'])
      const other = await ordersPage(stockOnly)
      try {
        assert.match((await other.page.getByRole('alert').textContent()) ?? '', /orders:read/)
      } finally {
        await other.context.close()
      }
    })
  })
}
