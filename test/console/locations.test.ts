// Locations in the console, in Debian's Chromium, against a live service on each backend: a store
// with one location looks as before (no picker, no stock by location, no transfer); an admin creates,
// renames, deactivates and activates locations on the Locations page (a location holding stock refused
// with the service's 409 in its words, the default one never offered); the Stock page's picker shows
// one location's stock, a page at a time, and edits there; a pet's page shows its stock at each
// location and transfers between them (a refusal in the service's words, nothing moved); a read-only
// key sees all of it but no control to change it. Screenshots at 1280 and 390 pixels go to
// test-artifacts/console/.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { createClient, type InventoryChange, PetstoreError, type StockLevel } from 'petstore-client'
import { browserUnavailable, launchBrowser } from '../support/browser.js'
import { BACKENDS, createKey, useSuite } from '../support/helpers.js'
import { openConsole, settledTable, signIn } from './console-page.js'

const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/console/', import.meta.url))
const skip = browserUnavailable()
// Pets 1-60: the default location's stock spans two pages of the Stock page (50 a page).
const SEED = Array.from({ length: 60 }, (_, i) => ({ petId: i + 1, quantity: i < 3 ? [10, 5, 8][i]! : 2, status: 'available' }))

/** What a pet's page shows in its Stock by location table: each row's location and quantity. */
const levelsShown = async (page: Page) => {
  const table = page.getByRole('table', { name: 'Stock by location', exact: true })
  await page.locator('table[aria-labelledby="levels-heading"][aria-busy="false"] tbody tr').first().waitFor()
  return table.locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((td) => td.textContent)))
}

for (const backend of BACKENDS) {
  describe(`console locations (${backend.name})`, { skip }, () => {
    const suite = useSuite(backend, { seed: SEED })
    let browser: Browser
    let readOnly: string
    before(async () => {
      browser = await launchBrowser()
      readOnly = await createKey(suite.database.url, 'shop-floor', ['inventory:read'])
      mkdirSync(ARTIFACTS, { recursive: true })
    })
    after(async () => browser?.close())
    const api = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })
    const idOf = async (name: string) => (await api().locations.list()).find((l) => l.name === name)!.id
    const levels = async (petId: bigint) =>
      (await api().inventory.locations(petId)).map((level: StockLevel) => [level.locationId, level.quantity] as const)
    const ledger = async (petId: bigint) => {
      const rows: InventoryChange[] = []
      for await (const change of api().changes.list({ petId })) rows.push(change)
      return rows
    }

    async function open(token: string, width = 1280) {
      const opened = await openConsole(browser, suite.server.baseUrl, width)
      await signIn(opened.page, token)
      await settledTable(opened.page, 'Stock')
      return opened
    }
    async function petPage(token: string, petId: bigint, width = 1280) {
      const opened = await open(token, width)
      await opened.page.getByRole('link', { name: String(petId), exact: true }).click()
      await opened.page.getByRole('heading', { name: `Pet ${petId}`, exact: true }).waitFor()
      await opened.page.locator('dd.quantity').waitFor()
      return opened
    }
    const locationsPage = async (page: Page) => {
      await page.getByRole('link', { name: 'Locations', exact: true }).click()
      await page.getByRole('heading', { name: 'Locations', exact: true }).waitFor()
      return settledTable(page, 'Locations')
    }
    /** The Locations table's rows: id, name (with its default tag), state. */
    const locationRows = async (page: Page) =>
      (await settledTable(page, 'Locations'))
        .locator('tbody tr')
        .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent)))
    /** The Stock table's Quantity cell of a pet, once it reads `expected`. */
    const quantityShown = async (page: Page, petId: number, expected: number) =>
      (await settledTable(page, 'Stock'))
        .locator(`tbody tr:has(a[href="#/pets/${petId}"]) td:nth-child(2)`)
        .filter({ hasText: new RegExp(`^${expected}(Low stock)?$`) })
        .waitFor()

    test('When the store has one location, then the Stock page has no picker, a pet’s page no stock by location nor transfer, and the edit dialog no location', async () => {
      const { context, page, requests, problems } = await open(suite.token)
      try {
        assert.deepEqual(
          (await api().locations.list()).map((l) => [l.id, l.active]),
          [[1n, true]],
        )
        // The locations are read, and the page is as it was before there were any.
        await page.waitForFunction(() =>
          performance.getEntriesByType('resource').some((entry) => new URL(entry.name).pathname === '/v1/locations'),
        )
        assert.equal(await page.getByLabel('Location').count(), 0, 'no location picker')
        assert.deepEqual(await page.locator('.controls label').allTextContents(), ['Pet ID', 'Status', 'Low-stock threshold'])
        await quantityShown(page, 1, 10)
        await page.getByRole('button', { name: 'Edit 1', exact: true }).click()
        const dialog = page.getByRole('dialog', { name: 'Edit pet 1' })
        await dialog.getByText('In stock now: 10').waitFor()
        assert.equal(await dialog.getByLabel('Location').count(), 0, 'no location in the dialog')
        await page.keyboard.press('Escape')
        await dialog.waitFor({ state: 'detached' })
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-one-stock-1280.png` })

        await page.getByRole('link', { name: '1', exact: true }).click()
        await page.getByRole('heading', { name: 'Pet 1', exact: true }).waitFor()
        await page.locator('dd.quantity').getByText('10', { exact: true }).waitFor()
        await settledTable(page, 'Changes')
        assert.deepEqual(await page.locator('section h3').allTextContents(), ['Quantity over time', 'Changes'])
        assert.equal(await page.getByRole('button', { name: 'Transfer' }).count(), 0)
        assert.equal(await page.getByRole('columnheader', { name: 'Location' }).count(), 0, 'no Location column in the changes')
        assert.ok(!requests.some((url) => new URL(url).pathname.endsWith('/locations') && new URL(url).pathname !== '/v1/locations'))

        // The Locations page lists the default one.
        await locationsPage(page)
        assert.deepEqual(await locationRows(page), [['1', 'Defaultdefault', 'Active']])
        await page.getByText('One location so far').waitFor()
        assert.equal(await page.getByRole('button', { name: 'Deactivate Default' }).count(), 0, 'the default location is never offered')
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When an admin creates and renames locations, then they are listed, a taken name is refused in the service’s words, and the default one cannot be deactivated', async () => {
      const { context, page, problems } = await open(suite.token)
      try {
        await locationsPage(page)
        for (const name of ['Harbour Street', 'Warehouse']) {
          await page.getByLabel('Name', { exact: true }).fill(name)
          await page.getByRole('button', { name: 'Create location' }).click()
          await page
            .getByRole('status')
            .filter({ hasText: `Location ${name} created` })
            .waitFor()
          await page.getByRole('cell', { name, exact: true }).waitFor()
        }
        assert.equal(await page.getByLabel('Name', { exact: true }).inputValue(), '', 'the field is emptied for the next')
        const harbour = await idOf('Harbour Street')
        const warehouse = await idOf('Warehouse')
        assert.deepEqual(await locationRows(page), [
          ['1', 'Defaultdefault', 'Active'],
          [String(harbour), 'Harbour Street', 'Active'],
          [String(warehouse), 'Warehouse', 'Active'],
        ])

        // A name taken (case aside): the service's 409 in its words, nothing created.
        await page.getByLabel('Name', { exact: true }).fill('harbour street')
        await page.getByRole('button', { name: 'Create location' }).click()
        const refused = await api()
          .locations.create({ name: 'harbour street' })
          .catch((error: unknown) => error)
        assert.ok(refused instanceof PetstoreError && refused.code === 'location_name_taken')
        await page.getByRole('alert').filter({ hasText: refused.message }).waitFor()
        assert.equal((await api().locations.list()).length, 3)

        // Renamed in place, with the keyboard: the field takes the focus, Enter saves.
        await page.getByRole('button', { name: 'Rename Warehouse' }).click()
        const field = page.getByLabel('New name for Warehouse')
        await page.waitForFunction(() => document.activeElement?.id === 'rename-field')
        await field.fill('North Warehouse')
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-rename-1280.png` })
        await page.keyboard.press('Enter')
        await page.getByRole('status').filter({ hasText: 'Location Warehouse renamed North Warehouse.' }).waitFor()
        await page.getByRole('cell', { name: 'North Warehouse', exact: true }).waitFor()
        assert.equal((await api().locations.get(warehouse)).name, 'North Warehouse')
        // Escape gives up a rename, the focus back on its button.
        await page.getByRole('button', { name: 'Rename Harbour Street' }).click()
        await page.getByLabel('New name for Harbour Street').fill('Nope')
        await page.keyboard.press('Escape')
        await page.getByLabel('New name for Harbour Street').waitFor({ state: 'detached' })
        await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Rename Harbour Street')
        assert.equal((await api().locations.get(harbour)).name, 'Harbour Street')

        // Rename and Deactivate for the others; the default one may be renamed but is never offered for deactivation.
        assert.equal(await page.getByRole('button', { name: 'Rename Default' }).count(), 1)
        assert.equal(await page.getByRole('button', { name: 'Deactivate Default' }).count(), 0)
        assert.equal(await page.getByRole('button', { name: 'Deactivate Harbour Street' }).count(), 1)
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-1280.png` })
        assert.deepEqual(
          problems.filter((p) => !/status of 409/.test(p)),
          [],
        )
      } finally {
        await context.close()
      }
    })

    test('When a location is picked on the Stock page, then it shows that location’s stock a page at a time, edits there, and All locations the pets’ quantities in all', async () => {
      const harbour = await idOf('Harbour Street')
      await api().inventory.transfer(1n, { fromLocationId: 1n, toLocationId: harbour, quantity: 4 })
      await api().inventory.transfer(3n, { fromLocationId: 1n, toLocationId: harbour, quantity: 8 })
      const { context, page, requests, problems } = await open(suite.token)
      try {
        const picker = page.getByLabel('Location', { exact: true })
        await picker.waitFor()
        assert.equal(await picker.inputValue(), '', 'All locations, the default')
        assert.deepEqual(await picker.locator('option').allTextContents(), [
          'All locations',
          'Default',
          'Harbour Street',
          'North Warehouse',
        ])
        // All locations: each pet's quantity in all, as before.
        await quantityShown(page, 1, 10)
        await quantityShown(page, 3, 8)

        await picker.selectOption({ label: 'Harbour Street' })
        await page.getByText('The stock at Harbour Street only').waitFor()
        const table = await settledTable(page, 'Stock')
        await table.locator('tbody tr').nth(1).waitFor()
        assert.deepEqual(await table.locator('tbody tr td:nth-child(1)').allTextContents(), ['1', '3'])
        assert.deepEqual(await table.locator('tbody tr td:nth-child(2)').allTextContents(), ['4Low stock', '8'])
        const read = requests.filter((url) => new URL(url).pathname === `/v1/locations/${harbour}/inventory`)
        assert.equal(read.length, 1)
        assert.equal(new URL(read[0]!).searchParams.get('limit'), '50')
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-stock-1280.png` })

        // The status filter applies there too; a change there made elsewhere shows at once.
        await api().inventory.adjust(3n, { delta: 2, reason: 'arrival', locationId: harbour })
        await quantityShown(page, 3, 10)
        await api().inventory.adjust(3n, { delta: 5, reason: 'arrival' })
        await page.waitForTimeout(300)
        await quantityShown(page, 3, 10) // the default location's change is not Harbour Street's

        // An edit from here changes this location's stock.
        await page.getByRole('button', { name: 'Edit 1', exact: true }).click()
        const dialog = page.getByRole('dialog', { name: 'Edit pet 1' })
        assert.equal(await dialog.getByLabel('Location').inputValue(), String(harbour))
        await dialog.getByText('In stock at Harbour Street now: 4').waitFor()
        assert.equal(await dialog.getByLabel('Quantity').inputValue(), '4')
        await dialog.getByRole('radio', { name: 'Receive' }).check()
        await dialog.getByLabel('Units to receive').fill('3')
        await dialog.getByText('In stock at Harbour Street now: 4; after this: 7').waitFor()
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-edit-1280.png` })
        await dialog.getByRole('button', { name: 'Save' }).click()
        await dialog.waitFor({ state: 'detached' })
        await quantityShown(page, 1, 7)
        assert.deepEqual(await levels(1n), [
          [1n, 6],
          [harbour, 7],
        ])

        // A pet asked for by id: its stock there, or words when it has none there.
        await page.getByLabel('Pet ID').fill('2')
        await page.getByRole('button', { name: 'Show', exact: true }).click()
        await page.getByRole('alert').filter({ hasText: 'Pet 2 is not stocked at Harbour Street.' }).waitFor()
        await page.getByLabel('Pet ID').fill('1')
        await page.getByRole('button', { name: 'Show', exact: true }).click()
        await page.getByRole('button', { name: 'Show all' }).waitFor()
        await quantityShown(page, 1, 7)
        assert.equal(await (await settledTable(page, 'Stock')).locator('tbody tr').count(), 1)
        await page.getByRole('button', { name: 'Show all' }).click()

        // The default location: every entry, two pages of them, its own quantities.
        await picker.selectOption({ label: 'Default' })
        await quantityShown(page, 1, 6)
        await quantityShown(page, 3, 5)
        assert.equal(await (await settledTable(page, 'Stock')).locator('tbody tr').count(), 50)
        await page.getByRole('button', { name: 'Next page' }).click()
        await page.getByText('Page 2').waitFor()
        assert.equal(await (await settledTable(page, 'Stock')).locator('tbody tr').count(), 10)

        // Back to All locations: the first page again, each pet's quantity in all, kept right as changes come.
        await picker.selectOption({ label: 'All locations' })
        await page.getByText('Page 1').waitFor()
        await quantityShown(page, 1, 13)
        await quantityShown(page, 3, 15)
        await api().inventory.transfer(3n, { fromLocationId: harbour, toLocationId: 1n, quantity: 1 })
        await api().inventory.adjust(3n, { delta: -1, reason: 'damage', locationId: harbour })
        await quantityShown(page, 3, 14)
        assert.equal(await page.getByText('The stock at').count(), 0)
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When staff transfer units on a pet’s page, then its stock at each location changes and its quantity in all does not; a refused transfer says why and moves nothing', async () => {
      const harbour = await idOf('Harbour Street')
      const north = await idOf('North Warehouse')
      const { context, page, problems } = await petPage(suite.token, 1n)
      try {
        assert.deepEqual(await levelsShown(page), [
          ['Default', '6'],
          ['Harbour Street', '7'],
        ])
        assert.equal(await page.locator('dd.quantity').textContent(), '13')
        const form = page.getByRole('form', { name: 'Transfer' })
        assert.equal(await form.getByLabel('From').inputValue(), '1')
        assert.equal(await form.getByLabel('To').inputValue(), String(harbour))
        await form.getByLabel('From').selectOption(String(harbour))
        await form.getByLabel('To').selectOption(String(north))
        await form.getByLabel('Units').fill('5')
        await form.getByLabel('Note').fill('van 2')
        const rowsBefore = (await ledger(1n)).length
        await form.getByRole('button', { name: 'Transfer' }).click()
        const notice = page.getByRole('status').filter({ hasText: 'Moved 5 of pet 1' })
        await notice.waitFor()
        assert.equal(
          await notice.textContent(),
          'Moved 5 of pet 1 from Harbour Street to North Warehouse: Harbour Street now holds 2, North Warehouse 5.',
        )
        await page.getByRole('cell', { name: 'North Warehouse', exact: true }).first().waitFor()
        assert.deepEqual(await levelsShown(page), [
          ['Default', '6'],
          ['Harbour Street', '2'],
          ['North Warehouse', '5'],
        ])
        assert.equal(await page.locator('dd.quantity').textContent(), '13', 'a transfer moves units, it adds none')
        assert.deepEqual(await levels(1n), [
          [1n, 6],
          [harbour, 2],
          [north, 5],
        ])
        const rows = (await ledger(1n)).slice(rowsBefore)
        assert.deepEqual(
          rows.map((c) => [c.reason, c.locationId, c.previousQuantity, c.quantity, c.note]),
          [
            ['transfer', harbour, 7, 2, 'van 2'],
            ['transfer', north, 0, 5, 'van 2'],
          ],
        )
        assert.equal(rows[0]!.transferId, rows[1]!.transferId)
        assert.equal(await form.getByLabel('Units').inputValue(), '', 'emptied for the next')

        // The changes say where; the chart draws the quantity in all, which the transfer left at 13.
        const changes = await settledTable(page, 'Changes')
        await changes.locator('tbody tr').filter({ hasText: 'North Warehouse' }).first().waitFor()
        assert.deepEqual(
          await changes
            .locator('tbody tr')
            .first()
            .locator('td')
            .allTextContents()
            .then((t) => t.slice(1, 5)),
          ['transfer', 'North Warehouse', '0', '5'],
        )
        const chart = page.getByRole('img', { name: 'Quantity over time' })
        await chart.waitFor()
        const drawn = await chart.locator('circle').evaluateAll((circles) => circles.map((c) => Number((c as SVGElement).dataset.quantity)))
        // Seeded 10; a transfer (one point for its two rows) left it at 10; 3 received at Harbour Street; this transfer.
        assert.deepEqual(drawn, [10, 10, 13, 13])
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-pet-1280.png`, fullPage: true })

        // More than the source holds: the service's 409 in its words, and nothing moves.
        await form.getByLabel('From').selectOption(String(harbour))
        await form.getByLabel('To').selectOption('1')
        await form.getByLabel('Units').fill('50')
        await form.getByRole('button', { name: 'Transfer' }).click()
        const refused = await api()
          .inventory.transfer(1n, { fromLocationId: harbour, toLocationId: 1n, quantity: 50 })
          .catch((error: unknown) => error)
        assert.ok(refused instanceof PetstoreError && refused.code === 'insufficient_stock', String(refused))
        const alert = page.getByRole('alert')
        await alert.waitFor()
        assert.equal(await alert.textContent(), refused.message)
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-transfer-409-1280.png` })
        assert.deepEqual(await levels(1n), [
          [1n, 6],
          [harbour, 2],
          [north, 5],
        ])
        assert.equal((await ledger(1n)).length, rowsBefore + 2)
        assert.deepEqual(await levelsShown(page), [
          ['Default', '6'],
          ['Harbour Street', '2'],
          ['North Warehouse', '5'],
        ])
        assert.equal(await form.getByLabel('Units').inputValue(), '50', 'kept, to correct it')
        // The same location twice is not sent at all.
        await form.getByLabel('To').selectOption(String(harbour))
        await form.getByRole('button', { name: 'Transfer' }).click()
        await page.getByRole('alert').filter({ hasText: 'Choose two different locations' }).waitFor()
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-transfer-refused-1280.png` })
        assert.deepEqual(
          problems.filter((p) => !/status of 409/.test(p)),
          [],
        )
      } finally {
        await context.close()
      }
    })

    test('When a pet’s page is opened at 390 pixels, then its stock by location and the transfer form fit the screen', async () => {
      const { context, page, problems } = await petPage(suite.token, 1n, 390)
      try {
        await levelsShown(page)
        await page.getByRole('form', { name: 'Transfer' }).waitFor()
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-pet-390.png`, fullPage: true })
        const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, view: innerWidth }))
        assert.ok(widths.page <= widths.view, JSON.stringify(widths))
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When an admin deactivates a location that holds stock, then the service’s 409 says how much it holds; an empty one is deactivated, leaves the picker, and is activated again', async () => {
      const harbour = await idOf('Harbour Street')
      const { context, page, problems } = await open(suite.token, 390)
      try {
        await locationsPage(page)
        await page.getByRole('button', { name: 'Deactivate Harbour Street' }).click()
        const refused = await api()
          .locations.update(harbour, { active: false })
          .catch((error: unknown) => error)
        assert.ok(refused instanceof PetstoreError && refused.code === 'location_not_empty', String(refused))
        const alert = page.getByRole('alert')
        await alert.waitFor()
        assert.equal(await alert.textContent(), refused.message)
        assert.match(refused.message, /holds \d+ units/)
        assert.equal((await api().locations.get(harbour)).active, true)
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-409-390.png`, fullPage: true })
        const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, view: innerWidth }))
        assert.ok(widths.page <= widths.view, JSON.stringify(widths))

        // An empty one.
        await page.getByLabel('Name', { exact: true }).fill('Pop-up')
        await page.getByRole('button', { name: 'Create location' }).click()
        await page.getByRole('button', { name: 'Deactivate Pop-up' }).click()
        await page.getByRole('status').filter({ hasText: 'Location Pop-up deactivated' }).waitFor()
        const popUp = await idOf('Pop-up')
        assert.equal((await api().locations.get(popUp)).active, false)
        await page.getByRole('button', { name: 'Activate Pop-up' }).waitFor()
        assert.deepEqual((await locationRows(page)).at(-1), [String(popUp), 'Pop-up', 'Inactive'])
        assert.equal(await page.getByRole('alert').count(), 0, 'the earlier refusal is gone')

        // Renamed at 390 pixels too: nothing moves but the name's field.
        await page.getByRole('button', { name: 'Rename Pop-up' }).click()
        await page.getByLabel('New name for Pop-up').waitFor()
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-rename-390.png`, fullPage: true })
        await page.getByRole('button', { name: 'Cancel', exact: true }).click()

        // An inactive location takes no stock: not offered by the picker.
        await page.getByRole('link', { name: 'Stock', exact: true }).click()
        const picker = page.getByLabel('Location', { exact: true })
        await picker.waitFor()
        assert.deepEqual(await picker.locator('option').allTextContents(), [
          'All locations',
          'Default',
          'Harbour Street',
          'North Warehouse',
        ])
        await picker.selectOption({ label: 'Harbour Street' })
        await page.getByText('The stock at Harbour Street only').waitFor()
        await settledTable(page, 'Stock')
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-stock-390.png` })

        await locationsPage(page)
        await page.getByRole('button', { name: 'Activate Pop-up' }).click()
        await page.getByRole('status').filter({ hasText: 'Location Pop-up activated' }).waitFor()
        assert.equal((await api().locations.get(popUp)).active, true)
        assert.deepEqual(
          problems.filter((p) => !/status of 409/.test(p)),
          [],
        )
      } finally {
        await context.close()
      }
    })

    test('When a key may only read the stock, then it sees the locations, the picker and the stock by location, but no control to create, change or transfer', async () => {
      const { context, page, problems } = await open(readOnly)
      const writes: string[] = []
      page.on('request', (r) => r.method() !== 'GET' && writes.push(`${r.method()} ${r.url()}`))
      try {
        await locationsPage(page)
        assert.equal((await locationRows(page)).length, 4)
        assert.equal(await page.getByRole('button', { name: 'Create location' }).count(), 0)
        assert.equal(await page.getByLabel('Name', { exact: true }).count(), 0)
        assert.equal(await page.getByRole('button', { name: /^(Rename|Deactivate|Activate) / }).count(), 0)
        await page.getByText('needs a key with the admin scope').waitFor()
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-read-only-1280.png` })

        await page.getByRole('link', { name: 'Stock', exact: true }).click()
        const picker = page.getByLabel('Location', { exact: true })
        await picker.selectOption({ label: 'Harbour Street' })
        await page.getByText('The stock at Harbour Street only').waitFor()
        const edit = page.getByRole('button', { name: 'Edit 1', exact: true })
        await edit.waitFor()
        assert.equal(await edit.getAttribute('aria-disabled'), 'true')

        // The Changes page says where each row is, and finds the transfers.
        await page.getByRole('link', { name: 'Changes', exact: true }).click()
        await page.getByLabel('Reason').selectOption('transfer')
        await page.getByRole('button', { name: 'Filter' }).click()
        await page.locator('table[aria-label="Changes"] tbody tr:first-child td:nth-child(3):text-is("transfer")').waitFor()
        const changes = await settledTable(page, 'Changes')
        assert.equal(await changes.locator('thead th:nth-child(4)').textContent(), 'Location')
        const transfers = await changes
          .locator('tbody tr')
          .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].slice(2, 4).map((td) => td.textContent)))
        assert.ok(transfers.length >= 8, JSON.stringify(transfers))
        assert.ok(
          transfers.every(([reason]) => reason === 'transfer'),
          JSON.stringify(transfers),
        )
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-changes-1280.png` })

        await page.getByRole('link', { name: 'Stock', exact: true }).click()
        // The Stock table's own link: until it renders, the Changes page's rows link to pet 1 too.
        const stock = await settledTable(page, 'Stock')
        await stock.getByRole('link', { name: '1', exact: true }).click()
        await page.getByRole('heading', { name: 'Pet 1', exact: true }).waitFor()
        assert.deepEqual(
          (await levelsShown(page)).map((row) => row[0]),
          ['Default', 'Harbour Street', 'North Warehouse'],
        )
        assert.equal(await page.getByRole('form', { name: 'Transfer' }).count(), 0)
        assert.equal(await page.getByRole('button', { name: 'Transfer' }).count(), 0)
        await page.getByText('Transferring stock between locations needs a key with the inventory:write scope.').waitFor()
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-locations-read-only-pet-1280.png`, fullPage: true })
        assert.deepEqual(writes, [], 'nothing written')
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })
  })
}
