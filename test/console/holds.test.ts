// The console's Holds page in Debian's Chromium, against a live service on each backend: the active
// holds placed through the API listed with their reference, lines and a time left counting down in
// place; Release, after a confirmation, giving the units back; a hold that ended meanwhile (released
// elsewhere, expired) refused with the API's 409 in its words and gone from the list; keys without the
// orders scopes. Screenshots at 1280 and 390 pixels go to test-artifacts/console/.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { createClient, type ReservationCreate } from 'petstore-client'
import { browserUnavailable, launchBrowser } from '../support/browser.js'
import { BACKENDS, createKey, useSuite } from '../support/helpers.js'
import { openConsole, settledTable, signIn } from './console-page.js'

const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/console/', import.meta.url))
const skip = browserUnavailable()
const TABLE = 'Active holds'

/** The seconds a "Time left" cell says: `42 s`, `9 min 05 s`, `1 h 02 min 05 s`. */
function secondsIn(text: string | null): number {
  const match = /^(?:(\d+) h )?(?:(\d+) min )?(\d+) s$/.exec((text ?? '').trim())
  assert.ok(match, `a time left: ${text}`)
  return Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3])
}

for (const backend of BACKENDS) {
  describe(`console holds (${backend.name})`, { skip }, () => {
    const suite = useSuite(backend, {
      seed: [
        { petId: 1, quantity: 10, status: 'available' },
        { petId: 2, quantity: 5, status: 'available' },
        { petId: 3, quantity: 8, status: 'available' },
      ],
    })
    let browser: Browser
    before(async () => {
      browser = await launchBrowser()
      mkdirSync(ARTIFACTS, { recursive: true })
    })
    after(async () => browser?.close())
    const api = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })
    const hold = async (body: ReservationCreate) => (await api().reservations.hold(body)).id
    const stock = async (petId: bigint) => (await api().inventory.get(petId)).item.quantity

    async function holdsPage(token: string, width = 1280) {
      const opened = await openConsole(browser, suite.server.baseUrl, width)
      await signIn(opened.page, token)
      await opened.page.getByRole('link', { name: 'Holds' }).click()
      await opened.page.getByRole('heading', { name: 'Holds' }).waitFor()
      return opened
    }
    const row = (page: Page, id: bigint) =>
      page
        .getByRole('table', { name: TABLE, exact: true })
        .locator('tbody tr')
        .filter({ has: page.locator('td:first-child', { hasText: new RegExp(`^${id}$`) }) })
    const cell = (page: Page, id: bigint, column: number) => row(page, id).locator(`td:nth-child(${column})`)
    const listed = async (page: Page) => (await settledTable(page, TABLE)).locator('tbody tr td:first-child').allTextContents()

    test('When holds are placed through the API, then the page lists the active ones with their reference, lines and a time left that counts down without reading again', async () => {
      const first = await hold({ lines: [{ petId: 1n, quantity: 2 }], expiresInSeconds: 600, reference: 'cart-1' })
      const second = await hold({
        lines: [
          { petId: 2n, quantity: 1 },
          { petId: 3n, quantity: 4 },
        ],
        expiresInSeconds: 3600,
      })
      const ended = await hold({ lines: [{ petId: 3n, quantity: 1 }], expiresInSeconds: 600, reference: 'cart-ended' })
      await api().reservations.release(ended)
      const { context, page, requests, problems } = await holdsPage(suite.token)
      try {
        assert.deepEqual(await listed(page), [String(first), String(second)], 'the active holds, by id; not the released one')
        assert.equal(await cell(page, first, 2).textContent(), 'cart-1')
        assert.equal(await cell(page, second, 2).textContent(), '—', 'a hold without a reference')
        assert.deepEqual(await cell(page, first, 3).locator('li').allTextContents(), ['Pet 1 × 2'])
        assert.deepEqual(await cell(page, second, 3).locator('li').allTextContents(), ['Pet 2 × 1', 'Pet 3 × 4'])
        assert.equal(await cell(page, first, 3).getByRole('link', { name: 'Pet 1' }).getAttribute('href'), '#/pets/1')
        const { expiresAt } = await api().reservations.get(first)
        assert.equal(await cell(page, first, 4).locator('time').getAttribute('datetime'), expiresAt)

        // The time left, counting down each second in place: no request reads the holds again meanwhile.
        const reads = () => requests.filter((url) => new URL(url).pathname === '/v1/store/reservations').length
        const readsBefore = reads()
        const then = secondsIn(await cell(page, first, 5).textContent())
        assert.ok(then > 590 && then <= 600, `about 10 minutes left: ${then} s`)
        assert.ok(secondsIn(await cell(page, second, 5).textContent()) > 3590, 'about an hour left')
        await page.waitForTimeout(2_200)
        const now = secondsIn(await cell(page, first, 5).textContent())
        assert.ok(then - now >= 2 && then - now <= 4, `${then} s, then ${now} s`)
        assert.match((await cell(page, second, 5).textContent()) ?? '', /^1 h 00 min \d\d s$|^59 min \d\d s$/)
        assert.equal(reads(), readsBefore, 'the countdown reads nothing again')
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-holds-1280.png` })
        assert.deepEqual(problems, [])
        assert.deepEqual(
          requests.filter((url) => !url.startsWith(`${suite.server.baseUrl}/`) && !url.startsWith('data:')),
          [],
          'nothing from elsewhere',
        )
      } finally {
        await context.close()
      }
    })

    test('When staff release a hold and confirm, then the API has it released, its stock is back, and it leaves the list with a notice', async () => {
      const id = await hold({ lines: [{ petId: 1n, quantity: 2 }], expiresInSeconds: 600, reference: 'cart-1' })
      const held = await stock(1n)
      const { context, page, problems } = await holdsPage(suite.token)
      try {
        await settledTable(page, TABLE)
        await row(page, id)
          .getByRole('button', { name: `Release hold ${id}` })
          .click()
        // A confirmation first: nothing is released yet.
        const confirm = row(page, id).getByRole('button', { name: `Confirm releasing hold ${id}` })
        await confirm.waitFor()
        assert.equal((await api().reservations.get(id)).status, 'active')
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-holds-confirm-1280.png` })
        await confirm.click()
        const notice = page.getByRole('status').filter({ hasText: `Hold ${id} released` })
        await notice.waitFor()
        assert.equal(await notice.textContent(), `Hold ${id} released: 2 of pet 1 back in stock.`)
        await row(page, id).waitFor({ state: 'detached' })
        assert.equal((await api().reservations.get(id)).status, 'released')
        assert.equal(await stock(1n), held + 2)
        // The button went with its row: focus is on the notice of what happened, not lost to the document.
        assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('role')), 'status')
        assert.equal(await page.getByRole('alert').count(), 0)
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When a hold on the page was released elsewhere meanwhile, then Release (with the keyboard) shows the API’s 409 and the list is read again', async () => {
      const gone = await hold({ lines: [{ petId: 2n, quantity: 1 }], expiresInSeconds: 600, reference: 'cart-elsewhere' })
      const kept = await hold({ lines: [{ petId: 3n, quantity: 1 }], expiresInSeconds: 600, reference: 'cart-kept' })
      const { context, page, problems } = await holdsPage(suite.token, 390)
      try {
        await settledTable(page, TABLE)
        await row(page, gone).waitFor()
        await api().reservations.release(gone)
        const held = await stock(2n)
        await row(page, gone)
          .getByRole('button', { name: `Release hold ${gone}` })
          .focus()
        await page.keyboard.press('Enter')
        // The same button, now asking to confirm, keeps the focus.
        assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), `Confirm releasing hold ${gone}`)
        await page.keyboard.press('Enter')
        const alert = page.getByRole('alert')
        await alert.waitFor()
        assert.equal(await alert.textContent(), `Hold ${gone} was released: its units are back in stock`)
        await row(page, gone).waitFor({ state: 'detached' })
        assert.ok((await listed(page)).includes(String(kept)), 'the other holds stay')
        assert.equal(await stock(2n), held, 'nothing given back twice')
        assert.equal((await api().reservations.get(kept)).status, 'active')
        // The row went: focus is on the page's heading, not lost to the document.
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Holds')
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-holds-409-390.png` })
        // At 390 pixels the table scrolls within its box; the page itself is no wider than the screen.
        const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, view: innerWidth }))
        assert.ok(widths.page <= widths.view, JSON.stringify(widths))
        assert.deepEqual(
          problems.filter((p) => !/status of 409/.test(p)),
          [],
        )
      } finally {
        await context.close()
      }
    })

    test('When a hold’s time runs out with the page open, then it says expiring, Release is answered reservation_expired, and Refresh drops the expired ones', async () => {
      const soon = await hold({ lines: [{ petId: 1n, quantity: 1 }], expiresInSeconds: 10, reference: 'cart-soon' })
      const also = await hold({ lines: [{ petId: 2n, quantity: 1 }], expiresInSeconds: 10, reference: 'cart-also' })
      const { context, page, problems } = await holdsPage(suite.token)
      try {
        await settledTable(page, TABLE)
        assert.ok(secondsIn(await cell(page, soon, 5).textContent()) <= 10)
        await cell(page, soon, 5).getByText('expiring', { exact: true }).waitFor({ timeout: 15_000 })
        await cell(page, also, 5).getByText('expiring', { exact: true }).waitFor()
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-holds-expiring-1280.png` })
        await row(page, soon)
          .getByRole('button', { name: `Release hold ${soon}` })
          .click()
        await row(page, soon)
          .getByRole('button', { name: `Confirm releasing hold ${soon}` })
          .click()
        const alert = page.getByRole('alert')
        await alert.waitFor()
        assert.equal(await alert.textContent(), `Hold ${soon} has expired: its units are back in stock`)
        await row(page, soon).waitFor({ state: 'detached' })
        assert.equal((await api().reservations.get(soon)).status, 'expired')

        // The other one is gone too once the service expired it (within 2 s) and the list is read again.
        const deadline = performance.now() + 10_000
        while ((await api().reservations.get(also)).status === 'active') {
          assert.ok(performance.now() < deadline, 'the service expires a due hold within 2 s')
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        await page.getByRole('button', { name: 'Refresh' }).click()
        await row(page, also).waitFor({ state: 'detached' })
        assert.equal(await page.getByRole('alert').count(), 0, 'Refresh clears the previous problem')
        assert.deepEqual(
          problems.filter((p) => !/status of 409/.test(p)),
          [],
        )
      } finally {
        await context.close()
      }
    })

    test('When a key may read holds but not release them, then Release is disabled and says why; a key without orders:read is told what is missing, the rest of the console intact', async () => {
      const id = await hold({ lines: [{ petId: 1n, quantity: 1 }], expiresInSeconds: 600, reference: 'cart-reader' })
      const reader = await createKey(suite.database.url, 'holds-reader', ['orders:read', 'inventory:read'])
      const opened = await holdsPage(reader)
      try {
        const release = row(opened.page, id).getByRole('button', { name: `Release hold ${id}` })
        await release.waitFor()
        assert.equal(await release.getAttribute('aria-disabled'), 'true')
        assert.match((await opened.page.locator(`#${await release.getAttribute('aria-describedby')}`).textContent()) ?? '', /orders:write/)
        // Pressed all the same (it stays focusable, as every disabled button of the console): nothing happens.
        await release.focus()
        await opened.page.keyboard.press('Enter')
        assert.equal(await opened.page.getByRole('button', { name: `Confirm releasing hold ${id}` }).count(), 0, 'no confirmation offered')
        assert.equal((await api().reservations.get(id)).status, 'active')
        assert.deepEqual(opened.problems, [])
      } finally {
        await opened.context.close()
      }

      const stockOnly = await createKey(suite.database.url, 'holds-stock-only', ['inventory:read'])
      const { context, page, requests, problems } = await holdsPage(stockOnly)
      try {
        await settledTable(page, TABLE)
        assert.equal(await page.getByRole('alert').textContent(), 'Seeing holds needs a key with the orders:read scope.')
        assert.equal(await page.getByRole('button', { name: 'Try again' }).count(), 0, 'no use trying again')
        assert.equal(await page.locator('tbody tr').count(), 0)
        assert.equal(
          requests.filter((url) => new URL(url).pathname.startsWith('/v1/store/reservations')).length,
          0,
          'nothing asked that the key may not read',
        )
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-holds-no-scope-1280.png` })
        // The rest of the console as before.
        await page.getByRole('link', { name: 'Stock' }).click()
        await (await settledTable(page, 'Stock')).locator('tbody tr').first().waitFor()
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When the service answers 503 to the list, then the page says so with Try again, which shows the holds once it answers', async () => {
      const id = await hold({ lines: [{ petId: 3n, quantity: 1 }], expiresInSeconds: 600, reference: 'cart-503' })
      const opened = await openConsole(browser, suite.server.baseUrl)
      const { context, page } = opened
      try {
        await signIn(page, suite.token)
        const unavailable = JSON.stringify({ code: 'service_unavailable', message: 'The database is not answering', status: 503 })
        const list = (url: URL) => url.pathname === '/v1/store/reservations'
        await page.route(list, (route) =>
          route.fulfill({ status: 503, contentType: 'application/json', headers: { 'retry-after': '0' }, body: unavailable }),
        )
        await page.getByRole('link', { name: 'Holds' }).click()
        await settledTable(page, TABLE)
        assert.equal(await page.getByRole('alert').textContent(), 'The database is not answering')
        assert.equal(await page.locator('tbody tr').count(), 0, 'no rows made up')
        await page.unroute(list)
        await page.getByRole('button', { name: 'Try again' }).click()
        await row(page, id).waitFor()
        assert.equal(await page.getByRole('alert').count(), 0)
      } finally {
        await context.close()
      }
    })
  })
}
