// The operator console in Debian's Chromium, against a live service on each backend: served with a
// strict CSP and nothing from elsewhere, signed in with a key kept in sessionStorage only, the stock
// paged from the API, filtered, marked below a threshold, and edited with a reason, conditionally.
// Screenshots at 1280 and 390 pixels go to test-artifacts/console/.
import assert from 'node:assert/strict'
import { mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { createClient, type InventoryChange } from 'petstore-client'
import { CONSOLE_CSP } from '../../src/console/console.routes.js'
import { browserUnavailable, launchBrowser } from '../support/browser.js'
import { BACKENDS, createKey, useSuite } from '../support/helpers.js'
import { openConsole, settledTable, signIn } from './console-page.js'

const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/console/', import.meta.url))
const STATUSES = ['available', 'pending', 'sold'] as const
// 10,000 entries: pet n holds n % 50 units, its status by n % 3.
const SEED = Array.from({ length: 10_000 }, (_, i) => ({ petId: i + 1, quantity: (i + 1) % 50, status: STATUSES[(i + 1) % 3]! }))
const skip = browserUnavailable()
const BUILT = fileURLToPath(new URL('../../console/assets/', import.meta.url))

describe('console build', () => {
  test('When the console is built, then its JavaScript and CSS together are at most 150 KiB gzipped', () => {
    const assets = readdirSync(BUILT)
    assert.deepEqual(assets.map((name) => name.replace(/-[A-Z0-9]{8}\./, '.')).sort(), ['main.css', 'main.js'])
    const gzipped = assets.reduce((sum, name) => sum + gzipSync(readFileSync(BUILT + name), { level: 9 }).length, 0)
    assert.ok(gzipped <= 150 * 1024, `${gzipped} bytes gzipped`)
  })
})

for (const backend of BACKENDS) {
  describe(`console (${backend.name})`, { skip }, () => {
    const suite = useSuite(backend, { seed: SEED })
    let browser: Browser
    let readOnly: string
    before(async () => {
      browser = await launchBrowser()
      readOnly = await createKey(suite.database.url, 'counter-staff', ['inventory:read'])
      mkdirSync(ARTIFACTS, { recursive: true })
    })
    after(async () => browser?.close())
    const api = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })

    const open = (width = 1280) => openConsole(browser, suite.server.baseUrl, width)
    const settled = (page: Page) => settledTable(page, 'Stock')
    const firstPets = async (page: Page, count = 3) => {
      const table = await settled(page)
      await table.locator('tbody tr').first().waitFor()
      return (await table.locator('tbody tr td:first-child').allTextContents()).slice(0, count)
    }

    test('When /console/ is fetched, then it is HTML with the strict CSP, its hashed assets are cached for a year, and a wrong method is 405', async () => {
      const page = await fetch(`${suite.server.baseUrl}/console/`)
      assert.equal(page.status, 200)
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/)
      assert.equal(page.headers.get('content-security-policy'), CONSOLE_CSP)
      assert.match(CONSOLE_CSP, /default-src 'self'; script-src 'self'; style-src 'self'/)
      assert.equal(page.headers.get('cache-control'), 'no-cache')
      const html = await page.text()
      assert.doesNotMatch(html, /<script>|<style>| style=| on[a-z]+=/i, 'no inline script or style')
      const assets = [...html.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)].map((m) => m[1]!)
      assert.equal(assets.length, 2)
      for (const asset of assets) {
        const answer = await fetch(`${suite.server.baseUrl}/console/${asset}`)
        assert.equal(answer.status, 200)
        assert.equal(answer.headers.get('cache-control'), 'public, max-age=31536000, immutable')
        assert.match(asset, /-[A-Z0-9]{8}\.(js|css)$/)
      }
      const missing = await fetch(`${suite.server.baseUrl}/console/assets/nope.js`)
      assert.equal(missing.status, 404)
      assert.equal((await missing.json()).code, 'not_found')
      const posted = await fetch(`${suite.server.baseUrl}/console/`, { method: 'POST' })
      assert.equal(posted.status, 405)
      const redirect = await fetch(`${suite.server.baseUrl}/console`, { redirect: 'manual' })
      assert.deepEqual([redirect.status, redirect.headers.get('location')], [301, '/console/'])
    })

    test('When staff sign in with the keyboard and sign out, then the key is kept in sessionStorage only, never in a URL, and is dropped at sign-out', async () => {
      const { context, page, requests, problems } = await open()
      try {
        await page.getByLabel('API key').focus()
        await page.keyboard.type(suite.token)
        await page.keyboard.press('Enter')
        await page.getByRole('button', { name: 'Sign out' }).waitFor()
        assert.ok(await page.getByText('Signed in as suite').isVisible())
        assert.ok(await page.getByText('inventory:read, inventory:write').isVisible())
        const stored = await page.evaluate(() => ({ session: { ...sessionStorage }, local: { ...localStorage } }))
        assert.deepEqual(Object.values(stored.session), [suite.token])
        assert.ok(!JSON.stringify(stored.local).includes(suite.token))
        assert.ok(!requests.some((url) => url.includes(suite.token)), 'the key is in no URL')
        const origin = new URL(suite.server.baseUrl).origin
        assert.deepEqual(
          requests.filter((url) => new URL(url).origin !== origin),
          [],
          'nothing is loaded from anywhere else',
        )
        await page.getByRole('button', { name: 'Sign out' }).click()
        await page.getByLabel('API key').waitFor()
        assert.equal(await page.evaluate(() => sessionStorage.length), 0)
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When a wrong key is typed, then the page says so in words and stays signed out', async () => {
      const { context, page } = await open()
      try {
        await page.getByLabel('API key').fill('psk_not-a-key')
        await page.getByRole('button', { name: 'Sign in' }).click()
        await page.getByRole('alert').waitFor()
        assert.match((await page.getByRole('alert').textContent()) ?? '', /not accepted/)
        assert.equal(await page.evaluate(() => sessionStorage.length), 0)
      } finally {
        await context.close()
      }
    })

    test('When the stock is paged, filtered and searched, then each view comes from one page of the API, never the whole list', async () => {
      const { context, page, requests } = await open()
      try {
        await signIn(page, suite.token)
        assert.deepEqual(await firstPets(page), ['1', '2', '3'])
        assert.equal(await page.getByRole('table', { name: 'Stock' }).locator('tbody tr').count(), 50)
        await page.getByRole('button', { name: 'Next page' }).click()
        await page.getByText('Page 2').waitFor()
        assert.deepEqual(await firstPets(page), ['51', '52', '53'])
        await page.getByRole('button', { name: 'Next page' }).click()
        await page.getByText('Page 3').waitFor()
        assert.deepEqual(await firstPets(page), ['101', '102', '103'])
        await page.getByRole('button', { name: 'Previous page' }).click()
        await page.getByText('Page 2').waitFor()
        assert.deepEqual(await firstPets(page), ['51', '52', '53'])

        await page.getByLabel('Status').selectOption('sold')
        await page.getByText('Page 1').waitFor()
        const statuses = await (await settled(page)).locator('tbody tr td:nth-child(3)').allTextContents()
        assert.equal(statuses.length, 50)
        assert.ok(statuses.every((s) => s === 'sold'))

        await page.getByLabel('Pet ID').fill('9999')
        await page.getByRole('button', { name: 'Show', exact: true }).click()
        await page.getByRole('button', { name: 'Edit 9999', exact: true }).waitFor()
        assert.equal(await (await settled(page)).locator('tbody tr').count(), 1)

        const listings = requests.filter((url) => new URL(url).pathname === '/v1/inventory')
        assert.ok(listings.length >= 4)
        assert.ok(
          listings.every((url) => new URL(url).searchParams.get('limit') === '50'),
          listings.join(' '),
        )
      } finally {
        await context.close()
      }
    })

    test('When a low-stock threshold is set, then entries below it are marked, and the threshold is kept in this browser', async () => {
      const { context, page } = await open()
      try {
        await signIn(page, suite.token)
        await firstPets(page)
        await page.getByLabel('Low-stock threshold').fill('3')
        const table = await settled(page)
        // Pets 1 and 2 hold 1 and 2 units; 3 holds 3.
        assert.deepEqual(await table.locator('tr.low td:first-child').allTextContents(), ['1', '2', '50'])
        assert.equal(await table.getByText('Low stock').count(), 3)
        await page.reload()
        await firstPets(page)
        assert.equal(await page.getByLabel('Low-stock threshold').inputValue(), '3')
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-stock-1280.png`, fullPage: false })
      } finally {
        await context.close()
      }
    })

    test('When an entry is edited with a reason and a note, then the API has it, with its ledger row', async () => {
      const { context, page } = await open()
      try {
        await signIn(page, suite.token)
        await page.getByRole('button', { name: 'Edit 7', exact: true }).click()
        const dialog = page.getByRole('dialog')
        await dialog.getByLabel('Quantity').fill('77')
        await dialog.getByLabel('Reason').selectOption('arrival')
        await dialog.getByLabel('Note').fill('crate 7')
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-edit-1280.png` })
        await dialog.getByRole('button', { name: 'Save' }).click()
        await dialog.waitFor({ state: 'detached' })
        const row = page.getByRole('table', { name: 'Stock' }).locator('tbody tr').nth(6)
        await row.getByText('77').waitFor()
        assert.equal((await api().inventory.get(7n)).item.quantity, 77)
        const changes: InventoryChange[] = []
        for await (const change of api().changes.list({ petId: 7n })) changes.push(change)
        assert.deepEqual([changes.at(-1)!.quantity, changes.at(-1)!.reason, changes.at(-1)!.note], [77, 'arrival', 'crate 7'])
      } finally {
        await context.close()
      }
    })

    test('When the entry changed since the dialog read it, then the save is refused with an alert showing the current quantity, and re-applying saves', async () => {
      const { context, page } = await open()
      try {
        await signIn(page, suite.token)
        await page.getByRole('button', { name: 'Edit 8', exact: true }).click()
        const dialog = page.getByRole('dialog')
        await dialog.getByLabel('Quantity').fill('12')
        // Someone else, meanwhile.
        await api().inventory.set(8n, { quantity: 31 })
        await dialog.getByRole('button', { name: 'Save' }).click()
        const alert = dialog.getByRole('alert')
        await alert.waitFor()
        assert.match((await alert.textContent()) ?? '', /now 31/)
        assert.equal((await api().inventory.get(8n)).item.quantity, 31)
        await alert.getByRole('button', { name: 'Re-apply 12' }).click()
        await dialog.waitFor({ state: 'detached' })
        assert.equal((await api().inventory.get(8n)).item.quantity, 12)
      } finally {
        await context.close()
      }
    })

    test('When a key without inventory:write signs in, then every edit button is disabled but reachable, and says why', async () => {
      const { context, page } = await open(390)
      try {
        await signIn(page, readOnly)
        const edit = page.getByRole('button', { name: 'Edit 1', exact: true })
        await edit.waitFor()
        assert.equal(await edit.getAttribute('aria-disabled'), 'true')
        const described = await edit.getAttribute('aria-describedby')
        assert.match((await page.locator(`#${described}`).textContent()) ?? '', /inventory:write/)
        // Still reachable with the keyboard (not the disabled attribute), and pressing it does nothing.
        await edit.focus()
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Edit 1')
        await page.keyboard.press('Enter')
        await edit.click({ force: true })
        assert.equal(await page.getByRole('dialog').count(), 0)
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-stock-390.png`, fullPage: false })
      } finally {
        await context.close()
      }
    })
  })
}
