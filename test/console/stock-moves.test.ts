// Stock moves in the console, in Debian's Chromium, against a live service on each backend: the edit
// dialog receives and removes units (an adjustment with an Idempotency-Key, no If-Match) besides
// setting a quantity, shows the service's refusal in its words and changes nothing then; the Changes
// page shows a batch's rows as one group. Screenshots at 1280 and 390 pixels go to test-artifacts/console/.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { createClient, type InventoryChange } from 'petstore-client'
import { browserUnavailable, launchBrowser } from '../support/browser.js'
import { BACKENDS, useSuite } from '../support/helpers.js'
import { openConsole, settledTable, signIn } from './console-page.js'

const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/console/', import.meta.url))
const skip = browserUnavailable()

for (const backend of BACKENDS) {
  describe(`console stock moves (${backend.name})`, { skip }, () => {
    const suite = useSuite(backend, {
      seed: [
        { petId: 1, quantity: 24, status: 'available' },
        { petId: 2, quantity: 5, status: 'available' },
        { petId: 3, quantity: 10, status: 'pending' },
        { petId: 4, quantity: 0, status: 'sold' },
        { petId: 5, quantity: 7, status: 'available' },
      ],
    })
    let browser: Browser
    before(async () => {
      browser = await launchBrowser()
      mkdirSync(ARTIFACTS, { recursive: true })
    })
    after(async () => browser?.close())
    const api = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })
    const ledger = async (petId?: bigint) => {
      const rows: InventoryChange[] = []
      for await (const change of api().changes.list(petId === undefined ? {} : { petId })) rows.push(change)
      return rows
    }
    /** The Stock table's Quantity cell of a pet, once it reads `expected`. */
    const quantityShown = async (page: Page, petId: number, expected: string) => {
      const row = (await settledTable(page, 'Stock'))
        .locator('tbody tr')
        .filter({ has: page.getByRole('link', { name: String(petId), exact: true }) })
      await row
        .locator('td.num')
        .filter({ hasText: new RegExp(`^${expected}(Low stock)?$`) })
        .waitFor()
    }

    test('When staff receive 12 units with the keyboard alone, then one adjustment goes with an Idempotency-Key and no If-Match, the list shows the new quantity, and the ledger row says arrival', async () => {
      const { context, page, problems } = await openConsole(browser, suite.server.baseUrl)
      const sent: { method: string; url: string; headers: Record<string, string>; body: string | null }[] = []
      page.on('request', async (r) => {
        if (new URL(r.url()).pathname.startsWith('/v1/inventory/1'))
          sent.push({ method: r.method(), url: r.url(), headers: await r.allHeaders(), body: r.postData() })
      })
      try {
        await signIn(page, suite.token)
        await quantityShown(page, 1, '24')
        await page.getByRole('button', { name: 'Edit 1', exact: true }).focus()
        await page.keyboard.press('Enter')
        const dialog = page.getByRole('dialog', { name: 'Edit pet 1' })
        await dialog.getByText('In stock now: 24').waitFor()
        // Focus starts in the number field, as before; the choice of change is just before it.
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'edit-quantity')
        await page.keyboard.press('Shift+Tab')
        assert.equal(await page.evaluate(() => (document.activeElement as HTMLInputElement).value), 'set')
        await page.keyboard.press('ArrowRight')
        assert.ok(await dialog.getByRole('radio', { name: 'Receive' }).isChecked())
        await page.keyboard.press('Tab')
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'edit-quantity')
        // The field is now the units to receive, empty, and the reason arrival unless chosen otherwise.
        assert.equal(await dialog.getByLabel('Units to receive').inputValue(), '')
        assert.equal(await dialog.getByLabel('Reason').inputValue(), 'arrival')
        assert.deepEqual(await dialog.getByLabel('Reason').locator('option').allTextContents(), ['arrival', 'return', 'adjustment'])
        await page.keyboard.type('12')
        await dialog.getByText('In stock now: 24; after this: 36').waitFor()
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-receive-1280.png` })
        await page.keyboard.press('Enter')
        await dialog.waitFor({ state: 'detached' })
        await quantityShown(page, 1, '36')
        // Focus is back on the button that opened the dialog.
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Edit 1')

        assert.equal((await api().inventory.get(1n)).item.quantity, 36)
        const last = (await ledger(1n)).at(-1)!
        assert.deepEqual([last.previousQuantity, last.quantity, last.reason, last.note, last.batchId], [24, 36, 'arrival', null, null])
        const writes = sent.filter((r) => r.method !== 'GET')
        assert.equal(writes.length, 1, JSON.stringify(writes))
        assert.equal(new URL(writes[0]!.url).pathname, '/v1/inventory/1/adjustments')
        assert.equal(writes[0]!.method, 'POST')
        assert.deepEqual(JSON.parse(writes[0]!.body ?? ''), { delta: 12, reason: 'arrival' })
        assert.match(writes[0]!.headers['idempotency-key'] ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
        assert.equal(writes[0]!.headers['if-match'], undefined)
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When staff remove more units than there are, or receive past the maximum, then the dialog shows the service’s refusal and nothing changes', async () => {
      const { context, page } = await openConsole(browser, suite.server.baseUrl, 390)
      try {
        await signIn(page, suite.token)
        await quantityShown(page, 2, '5')
        const rowsBefore = (await ledger()).length
        await page.getByRole('button', { name: 'Edit 2', exact: true }).click()
        const dialog = page.getByRole('dialog', { name: 'Edit pet 2' })
        await dialog.getByText('In stock now: 5').waitFor()
        await dialog.getByRole('radio', { name: 'Remove' }).check()
        assert.deepEqual(await dialog.getByLabel('Reason').locator('option').allTextContents(), ['damage', 'loss', 'adjustment'])
        await dialog.getByLabel('Units to remove').fill('100')
        await dialog.getByLabel('Reason').selectOption('loss')
        await dialog.getByLabel('Note').fill('stocktake')
        await dialog.getByRole('button', { name: 'Save' }).click()
        const alert = dialog.getByRole('alert')
        await alert.waitFor()
        assert.equal(await alert.textContent(), 'Pet 2 has 5 in stock; removing 100 would take it below zero')
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-remove-refused-390.png` })
        // Still open, with what was typed, to correct it.
        assert.equal(await dialog.getByLabel('Units to remove').inputValue(), '100')

        await dialog.getByRole('radio', { name: 'Receive' }).check()
        await dialog.getByLabel('Units to receive').fill('2147483647')
        await dialog.getByRole('button', { name: 'Save' }).click()
        await dialog.getByRole('alert').filter({ hasText: 'adding 2147483647 would take it past 2147483647' }).waitFor()
        assert.equal(await dialog.getByRole('alert').textContent(), 'Pet 2 has 5 in stock; adding 2147483647 would take it past 2147483647')

        // Units that are no whole number are not sent at all.
        await dialog.getByLabel('Units to receive').fill('-3')
        await dialog.getByRole('button', { name: 'Save' }).click()
        await dialog.getByRole('alert').filter({ hasText: 'whole number from 1' }).waitFor()

        await page.keyboard.press('Escape')
        await dialog.waitFor({ state: 'detached' })
        await quantityShown(page, 2, '5')
        assert.equal((await api().inventory.get(2n)).item.quantity, 5)
        assert.equal((await ledger()).length, rowsBefore)
      } finally {
        await context.close()
      }
    })

    test('When a batch is made through the API, before the Changes page is opened or while it is open, then each shows as one group that opens to its rows', async () => {
      await api().inventory.set(4n, { quantity: 1, reason: 'count' })
      const first = await api().inventory.batch([
        { petId: 1n, delta: 3, reason: 'arrival' },
        { petId: 3n, delta: -2, reason: 'damage', note: 'crate dropped' },
        { petId: 5n, quantity: 9, reason: 'count' },
      ])
      await api().inventory.set(4n, { quantity: 2, reason: 'count' })
      const { context, page, problems } = await openConsole(browser, suite.server.baseUrl)
      try {
        await signIn(page, suite.token)
        await page.getByRole('link', { name: 'Changes' }).click()
        const table = await settledTable(page, 'Changes')
        const group = table.locator(`tr.batch[data-batch-id="${first.batchId}"]`)
        await group.waitFor()
        assert.equal(await table.locator('tr.batch').count(), 1)
        // The group is one line among the rows, in its place: below the later set, above the earlier one.
        const rows = await ledger()
        assert.equal(await table.locator('tbody tr').count(), rows.length - 2)
        assert.equal(await table.locator('tbody tr').nth(1).getAttribute('data-batch-id'), first.batchId)
        assert.deepEqual(await table.locator('tbody tr').nth(0).locator('td:nth-child(5)').textContent(), '2')
        assert.deepEqual(await table.locator('tbody tr').nth(2).locator('td:nth-child(5)').textContent(), '1')
        const toggle = group.getByRole('button', { name: 'Batch of 3 changes' })
        assert.equal(await toggle.getAttribute('aria-expanded'), 'false')
        assert.equal(await group.locator('.batch-reasons').textContent(), 'arrival, damage, count')
        // Its pets compactly, in the order the batch applied them.
        assert.deepEqual(await group.locator('.batch-moves li').allTextContents(), ['1 +3', '3 −2', '5 +2'])
        assert.equal(await table.locator('tr.in-batch').count(), 0)

        await toggle.click()
        assert.equal(await toggle.getAttribute('aria-expanded'), 'true')
        const opened = table.locator('tr.in-batch')
        assert.equal(await opened.count(), 3)
        const cells = (column: number) => opened.locator(`td:nth-child(${column})`).allTextContents()
        assert.deepEqual(await cells(2), ['1', '3', '5'])
        assert.deepEqual(await cells(3), ['arrival', 'damage', 'count'])
        assert.deepEqual(await cells(4), ['36', '10', '7']) // pet 1 received 12 in the first test
        assert.deepEqual(await cells(5), ['39', '8', '9'])
        assert.deepEqual(await cells(6), ['—', 'crate dropped', '—'])
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-batch-1280.png` })
        // Closed again with the keyboard.
        await toggle.focus()
        await page.keyboard.press('Enter')
        await opened.first().waitFor({ state: 'detached' })
        assert.equal(await toggle.getAttribute('aria-expanded'), 'false')

        // A batch made while the page is open arrives live, row by row, and still shows as one.
        const second = await api().inventory.batch([
          { petId: 2n, delta: 1, reason: 'return' },
          { petId: 2n, delta: -1, reason: 'loss' },
          { petId: 4n, delta: 4, reason: 'arrival' },
          { petId: 1n, delta: -7, reason: 'damage' },
        ])
        const live = table.locator(`tr.batch[data-batch-id="${second.batchId}"]`)
        await live.getByRole('button', { name: 'Batch of 4 changes' }).waitFor()
        assert.equal(await table.locator('tbody tr').first().getAttribute('data-batch-id'), second.batchId)
        assert.deepEqual(await live.locator('.batch-moves li').allTextContents(), ['2 +1', '2 −1', '4 +4', '1 −7'])
        assert.equal(await table.locator('tr.batch').count(), 2)
        assert.equal(await table.locator('tbody tr').count(), rows.length - 2 + 1)
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When the Changes page is opened at 390 pixels, then a batch’s line stays readable', async () => {
      await api().inventory.batch([
        { petId: 3n, delta: 5, reason: 'arrival', note: 'pallet 9' },
        { petId: 5n, delta: -1, reason: 'loss' },
      ])
      const { context, page } = await openConsole(browser, suite.server.baseUrl, 390)
      try {
        await signIn(page, suite.token)
        await page.getByRole('link', { name: 'Changes' }).click()
        const table = await settledTable(page, 'Changes')
        await table.locator('tr.batch').first().waitFor()
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-batch-390.png` })
        // The line wraps within the table rather than widening the page past its scroller.
        const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, view: innerWidth }))
        assert.ok(widths.page <= widths.view, JSON.stringify(widths))
      } finally {
        await context.close()
      }
    })
  })
}
