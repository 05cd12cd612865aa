// The console's Changes page in Debian's Chromium, against a live service on each backend: the
// store's ledger newest first, a page at a time (the API's `before`), one pet's rows, one reason's.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser } from 'playwright-core'
import { createClient, type InventoryChange } from 'petstore-client'
import { browserUnavailable, launchBrowser } from '../support/browser.js'
import { BACKENDS, useSuite } from '../support/helpers.js'
import { openConsole, settledTable, signIn } from './console-page.js'

const BIG = 2n ** 53n + 1n
const skip = browserUnavailable()

for (const backend of BACKENDS) {
  describe(`console changes (${backend.name})`, { skip }, () => {
    const suite = useSuite(backend, {
      seed: [
        { petId: 1, quantity: 10, status: 'available' },
        { petId: BIG, quantity: 5, status: 'available' },
      ],
    })
    let browser: Browser
    before(async () => {
      browser = await launchBrowser()
    })
    after(async () => browser?.close())
    const api = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })
    const cells = async (table: Awaited<ReturnType<typeof settledTable>>, column: number) =>
      table.locator(`tbody tr td:nth-child(${column})`).allTextContents()

    test('When the Changes page is opened and paged, then it shows the ledger newest first, 50 rows a page, and one pet’s or one reason’s rows when filtered', async () => {
      for (let i = 0; i < 60; i++)
        await api().inventory.set(i % 4 === 0 ? BIG : 1n, { quantity: 100 + i, reason: 'count', note: `count ${i}` })
      const ledger: InventoryChange[] = []
      for await (const change of api().changes.list()) ledger.push(change)
      const newestFirst = ledger.reverse()

      const { context, page, problems } = await openConsole(browser, suite.server.baseUrl)
      try {
        await signIn(page, suite.token)
        await page.getByRole('link', { name: 'Changes' }).click()
        let table = await settledTable(page, 'Changes')
        assert.deepEqual(
          await cells(table, 5),
          newestFirst.slice(0, 50).map((c) => String(c.quantity)),
        )
        assert.deepEqual(
          await cells(table, 6),
          newestFirst.slice(0, 50).map((c) => c.note ?? ''),
        )
        await page.getByRole('button', { name: 'Next page' }).click()
        await page.getByText('Page 2').waitFor()
        table = await settledTable(page, 'Changes')
        assert.deepEqual(
          await cells(table, 5),
          newestFirst.slice(50).map((c) => String(c.quantity)),
        )

        await page.getByLabel('Pet ID').fill(String(BIG))
        await page.getByRole('button', { name: 'Filter' }).click()
        await page.getByText('Page 1').waitFor()
        table = await settledTable(page, 'Changes')
        const mine = newestFirst.filter((c) => c.petId === BIG)
        assert.deepEqual(
          await cells(table, 2),
          mine.map((c) => String(c.petId)),
        )
        assert.deepEqual(
          await cells(table, 5),
          mine.map((c) => String(c.quantity)),
        )
        // Each Pet cell leads to that pet's page.
        assert.equal(await table.locator('tbody tr td:nth-child(2) a').first().getAttribute('href'), `#/pets/${BIG}`)

        // By reason too: with the pet, its import row alone; then every pet's counts, newest first.
        const shows = async (expected: InventoryChange[]) => {
          const want = expected.map((c) => [String(c.petId), c.reason, String(c.quantity)].join(' '))
          let seen: string[] = []
          for (const deadline = Date.now() + 5000; Date.now() < deadline; await page.waitForTimeout(50)) {
            const shown = await settledTable(page, 'Changes')
            const [pets, reasons, quantities] = await Promise.all([cells(shown, 2), cells(shown, 3), cells(shown, 5)])
            seen = pets.map((pet, i) => [pet, reasons[i], quantities[i]].join(' '))
            if (JSON.stringify(seen) === JSON.stringify(want)) return
          }
          assert.deepEqual(seen, want)
        }
        await page.getByLabel('Reason').selectOption('import')
        await page.getByRole('button', { name: 'Filter' }).click()
        const imported = newestFirst.filter((c) => c.petId === BIG && c.reason === 'import')
        assert.equal(imported.length, 1)
        await shows(imported)
        await page.getByLabel('Pet ID').fill('')
        await page.getByLabel('Reason').selectOption('count')
        await page.getByRole('button', { name: 'Filter' }).click()
        const counts = newestFirst.filter((c) => c.reason === 'count')
        assert.equal(counts.length, 60)
        await shows(counts.slice(0, 50))
        await page.getByRole('button', { name: 'Next page' }).click()
        await shows(counts.slice(50))
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })
  })
}
