// The console when things go wrong, and with the keyboard alone, in Debian's Chromium against a live
// service on each backend. The page is loaded through a TCP proxy of the test's own: cutting it makes
// the service unreachable while the page stays open, and every page must then say so in words (and
// show its data again once the service is back); an API error answer (a revoked key, a missing
// scope) is said in words too. Then the whole round (sign in, every nav link, an edit with a reason,
// an order placed and approved) with page.keyboard only, at 1280 and at 390 pixels wide, the focus
// shown and kept in the dialog while it is open. Screenshots go to test-artifacts/console/.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { createClient, type InventoryChange } from 'petstore-client'
import { browserUnavailable, launchBrowser } from '../support/browser.js'
import { BACKENDS, createKey, useSuite } from '../support/helpers.js'
import { TcpProxy } from '../support/tcp-proxy.js'
import { openConsole, settledTable, signIn } from './console-page.js'

const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/console/', import.meta.url))
const skip = browserUnavailable()
const UNREACHABLE = /The service cannot be reached/
// What Chromium logs for each request the cut proxy refuses or resets: expected, and nothing else.
const REFUSED = /Failed to load resource: net::ERR_(CONNECTION_REFUSED|CONNECTION_RESET|EMPTY_RESPONSE)/
// Pets 1-60, so the Stock page has a second page; pet 1 holds enough for the orders placed here.
const SEED = Array.from({ length: 60 }, (_, i) => ({ petId: i + 1, quantity: i === 0 ? 100 : 10, status: 'available' }))

/** The page's focused element as a keyboard user meets it. */
interface Focused {
  tag: string
  id: string
  /** Its aria-label, its text (a link, a button) or the text of its label (a field). */
  name: string
  /** The text of the first cell of its table row, when it is in one. */
  row: string | undefined
  inDialog: boolean
  /** False while focus is in the browser's own UI (Tab past a modal dialog's last field). */
  pageHasFocus: boolean
  /** Matches :focus-visible and draws an outline. */
  ringShown: boolean
  inViewport: boolean
}

const focused = (page: Page): Promise<Focused> =>
  page.evaluate(() => {
    const e = document.activeElement as HTMLElement | null
    const style = e ? getComputedStyle(e) : undefined
    const r = e?.getBoundingClientRect()
    const labelled = e instanceof HTMLInputElement || e instanceof HTMLSelectElement ? e.labels?.[0]?.textContent : undefined
    return {
      tag: e?.tagName.toLowerCase() ?? '',
      id: e?.id ?? '',
      name: (e?.getAttribute('aria-label') ?? labelled ?? e?.textContent ?? '').trim(),
      row: e?.closest('tr')?.querySelector('td')?.textContent?.trim(),
      inDialog: !!e?.closest('dialog'),
      pageHasFocus: document.hasFocus(),
      ringShown: !!e && e.matches(':focus-visible') && style!.outlineStyle !== 'none' && Number.parseFloat(style!.outlineWidth) > 0,
      inViewport: !!r && r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth,
    }
  })

const describeFocus = (f: Focused) => `${f.tag}${f.id ? `#${f.id}` : ''} "${f.name.slice(0, 40)}"${f.pageHasFocus ? '' : ' (browser UI)'}`

/** Whether focus is on something in the page, not on <body> or out in the browser's UI. */
const onElement = (f: Focused) => f.pageHasFocus && f.tag !== 'body'

/**
 * Presses `key` (Tab by default) until the focused element is the one `wanted` accepts, at most
 * `max` times. Every element met on the way must show its focus ring and be on screen.
 */
async function pressUntil(page: Page, wanted: (f: Focused) => boolean, what: string, key = 'Tab', max = 150): Promise<Focused> {
  const met: string[] = []
  for (let n = 0; n < max; n++) {
    await page.keyboard.press(key)
    const now = await focused(page)
    met.push(describeFocus(now))
    if (onElement(now)) {
      assert.ok(now.ringShown, `the focus ring is shown on ${describeFocus(now)}`)
      assert.ok(now.inViewport, `${describeFocus(now)} is scrolled into view when focused`)
    }
    if (wanted(now)) return now
  }
  assert.fail(`${what} not reached with ${max} presses of ${key}; met: ${met.join(', ')}`)
}

/**
 * Holds back the close events of the page's dialogs until the function returned is called, as a busy
 * machine may: the browser fires a dialog's close event with its next frame, and when frames lag behind
 * (the cores busy), the user's next keys are handled before it.
 */
async function holdCloseEvents(page: Page): Promise<() => Promise<void>> {
  await page.evaluate(() => {
    const held: EventTarget[] = []
    const hold = (event: Event) => {
      if (!event.isTrusted || event.target === null) return
      event.stopImmediatePropagation()
      held.push(event.target)
    }
    addEventListener('close', hold, true)
    ;(window as unknown as { releaseCloseEvents: () => void }).releaseCloseEvents = () => {
      removeEventListener('close', hold, true)
      for (const target of held) target.dispatchEvent(new Event('close'))
    }
  })
  return () => page.evaluate(() => (window as unknown as { releaseCloseEvents: () => void }).releaseCloseEvents())
}

const named =
  (name: string, tag?: string) =>
  (f: Focused): boolean =>
    onElement(f) && f.name === name && (tag === undefined || f.tag === tag)

for (const backend of BACKENDS) {
  describe(`console resilience and keyboard (${backend.name})`, { skip }, () => {
    const suite = useSuite(backend, {
      seed: SEED,
      // A webhook to this machine's loopback may be subscribed (its deliveries fail; only its row matters
      // here); deprecated calls are counted at once.
      env: { WEBHOOK_ALLOW_PRIVATE: 'true', DEPRECATED_CALLS_FLUSH_MS: '100' },
    })
    let browser: Browser
    let proxy: TcpProxy
    before(async () => {
      browser = await launchBrowser()
      proxy = await TcpProxy.start({ host: '127.0.0.1', port: suite.server.port })
      mkdirSync(ARTIFACTS, { recursive: true })
      // Something on every page, to tell its data from its problem: an order, a webhook, a deprecated call.
      await api().orders.place({ petId: 1n, quantity: 1 })
      await api().webhooks.create({ url: 'http://127.0.0.1:9/resilience', description: 'refused on purpose' })
      await fetch(`${suite.server.baseUrl}/v1/pets/1`, { headers: { authorization: `Bearer ${suite.token}` } })
      const deadline = performance.now() + 10_000
      while ((await api().deprecations.list()).length === 0) {
        assert.ok(performance.now() < deadline, 'the deprecated call is reported within 10 s')
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    })
    after(async () => {
      await proxy?.close()
      await browser?.close()
    })
    const api = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })
    /** The service as the page reaches it: through the proxy, which the tests cut and restore. */
    const proxied = () => `http://127.0.0.1:${proxy.port}`

    /** Each page behind a nav link, by the link's name: its heading and the table that holds its data. */
    const NAV = [
      { link: 'Orders', table: 'Orders' },
      { link: 'Changes', table: 'Changes' },
      { link: 'Keys', table: 'Keys' },
      { link: 'Webhooks', table: 'Webhooks' },
      { link: 'Deprecations', table: 'Deprecations' },
      { link: 'Stock', table: 'Stock' },
    ]
    const rows = (page: Page, table: string) => page.getByRole('table', { name: table, exact: true }).locator('tbody tr')

    test('When the kept key cannot be checked at a reload (the service answers 503), then the key is kept and Try again signs in; only a 401 drops it', async () => {
      const { context, page, problems } = await openConsole(browser, suite.server.baseUrl)
      try {
        await signIn(page, suite.token)
        await settledTable(page, 'Stock')
        const unavailable = JSON.stringify({ code: 'service_unavailable', message: 'The database is not answering', status: 503 })
        await page.route('**/v1/keys/current', (route) =>
          route.fulfill({ status: 503, contentType: 'application/json', headers: { 'retry-after': '0' }, body: unavailable }),
        )
        await page.reload()
        await page.getByText('The key kept in this tab could not be checked.').waitFor()
        assert.match((await page.getByRole('alert').textContent()) ?? '', /The database is not answering/)
        assert.equal(await page.evaluate(() => sessionStorage.length), 1, 'the key is still kept')
        await page.unroute('**/v1/keys/current')
        await page.getByRole('button', { name: 'Try again' }).click()
        await page.getByRole('button', { name: 'Sign out' }).waitFor()
        await settledTable(page, 'Stock')

        // A refusal is different: the key is dropped, and the sign-in says why.
        await page.route('**/v1/keys/current', (route) =>
          route.fulfill({
            status: 401,
            contentType: 'application/json',
            body: JSON.stringify({ code: 'unauthorized', message: 'The API key is not valid', status: 401 }),
          }),
        )
        await page.reload()
        await page.getByLabel('API key').waitFor()
        assert.match((await page.getByRole('alert').textContent()) ?? '', /The key was not accepted/)
        assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'the key is dropped')
        assert.deepEqual(
          problems.filter((p) => !/status of (401|503)/.test(p)),
          [],
        )
      } finally {
        await context.close()
      }
    })

    test('When the service becomes unreachable with the console open, then every page says so in words, and once it is back each shows its data again', async () => {
      const { context, page, problems } = await openConsole(browser, proxied())
      try {
        // Even signing in, with the page loaded but the service gone.
        await proxy.cut()
        await page.getByLabel('API key').fill(suite.token)
        await page.getByRole('button', { name: 'Sign in' }).click()
        assert.match((await page.getByRole('alert').textContent()) ?? '', UNREACHABLE)
        await proxy.restore()
        await signIn(page, suite.token)
        await settledTable(page, 'Stock')
        await rows(page, 'Stock').first().waitFor()
        await page.locator('.live').getByText('Live', { exact: true }).waitFor()

        await proxy.cut()
        // A pet's page, from its link in the Stock table: its entry, chart and changes each say why they are missing.
        await page.getByRole('link', { name: '1', exact: true }).click()
        await page.getByRole('heading', { name: 'Pet 1' }).waitFor()
        await settledTable(page, 'Changes')
        const petAlerts = page.getByRole('alert').filter({ hasText: UNREACHABLE })
        await petAlerts.nth(2).waitFor()
        assert.deepEqual(
          (await petAlerts.allTextContents()).map((text) => text.replace(UNREACHABLE, '…')),
          [
            '…. Check the connection and try again.',
            'The chart could not be drawn: …. Check the connection and try again.',
            'The changes could not be read: …. Check the connection and try again.',
          ],
        )
        assert.equal(await page.locator('dd.quantity').count(), 0, 'no quantity is made up')
        await page.locator('.live').getByText('Disconnected: reconnecting…').waitFor({ timeout: 10_000 })

        for (const { link, table } of NAV) {
          await page.getByRole('link', { name: link, exact: true }).click()
          await page.getByRole('heading', { name: link, exact: true }).waitFor()
          await settledTable(page, table)
          const alert = page.getByRole('alert')
          await alert.waitFor()
          assert.match((await alert.textContent()) ?? '', UNREACHABLE, `${link}: ${await alert.textContent()}`)
          assert.equal(await rows(page, table).count(), 0, `${link} shows no rows it could not read`)
          assert.equal(await page.getByRole('button', { name: 'Try again' }).count(), 1, `${link} offers to try again`)
        }
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-unreachable-1280.png` })
        // Trying again while it is still away: the same words, nothing made up.
        await page.getByRole('button', { name: 'Try again' }).click()
        await settledTable(page, 'Stock')
        assert.match((await page.getByRole('alert').textContent()) ?? '', UNREACHABLE)

        await proxy.restore()
        // Try again, in place, once it is back: the rows, the problem and its button gone.
        await page.getByRole('button', { name: 'Try again' }).click()
        await rows(page, 'Stock').first().waitFor()
        assert.deepEqual([await page.getByRole('alert').count(), await page.getByRole('button', { name: 'Try again' }).count()], [0, 0])
        // Navigating reads each page again: its rows, no problem left.
        for (const { link, table } of NAV) {
          await page.getByRole('link', { name: link, exact: true }).click()
          await page.getByRole('heading', { name: link, exact: true }).waitFor()
          await settledTable(page, table)
          await rows(page, table).first().waitFor()
          assert.equal(await page.getByRole('alert').count(), 0, `${link} shows no problem once the service is back`)
        }
        await page.getByRole('link', { name: '1', exact: true }).click()
        await page.getByRole('heading', { name: 'Pet 1' }).waitFor()
        await page.locator('dd.quantity').waitFor()
        await rows(page, 'Changes').first().waitFor()
        assert.equal(await page.getByRole('alert').count(), 0)

        assert.deepEqual(
          problems.filter((p) => !REFUSED.test(p)),
          [],
          'no errors but the requests refused while the service was away',
        )
      } finally {
        await proxy.restore()
        await context.close()
      }
    })

    test('When the service goes away while an order or an edit is on the page, then Place order and Save say in words what became of them', async () => {
      const { context, page, problems } = await openConsole(browser, proxied())
      try {
        await signIn(page, suite.token)
        await page.getByRole('link', { name: 'Orders', exact: true }).click()
        await rows(page, 'Orders').first().waitFor()
        await page.getByLabel('Pet ID').fill('1')
        await page.getByLabel('Quantity').fill('1')
        const before = (await api().inventory.get(1n)).item.quantity
        await proxy.cut()
        await page.getByRole('button', { name: 'Place order' }).click()
        // Placing is repeated under its Idempotency-Key until the client gives up: it knows nothing got through.
        const alert = page.getByRole('alert')
        await alert.waitFor()
        assert.match((await alert.textContent()) ?? '', UNREACHABLE)
        assert.equal((await api().inventory.get(1n)).item.quantity, before, 'nothing was placed')
        await proxy.restore()

        await page.getByRole('link', { name: 'Stock', exact: true }).click()
        await settledTable(page, 'Stock')
        await page.getByRole('button', { name: 'Edit 5', exact: true }).click()
        const dialog = page.getByRole('dialog')
        await page.locator('#edit-quantity:not([readonly])').waitFor()
        await dialog.getByLabel('Quantity').fill('55')
        await proxy.cut()
        await dialog.getByRole('button', { name: 'Save' }).click()
        const saveAlert = dialog.getByRole('alert')
        await saveAlert.waitFor()
        // A write whose answer never came: the browser cannot tell "not sent" from "sent, answer lost".
        assert.equal(
          await saveAlert.textContent(),
          'The service did not answer, so the change may or may not have been saved: check it once the service answers again.',
        )
        assert.equal((await api().inventory.get(5n)).item.quantity, 10, 'the save never reached the service')
        await page.keyboard.press('Escape')
        await dialog.waitFor({ state: 'detached' })
        assert.deepEqual(
          problems.filter((p) => !REFUSED.test(p)),
          [],
        )
      } finally {
        await proxy.restore()
        await context.close()
      }
    })

    test('When the signed-in key is revoked, then the next page says in words that it was not accepted, and a reload signs out with the same words', async () => {
      const token = await createKey(suite.database.url, 'soon-revoked', ['inventory:read', 'orders:read'])
      const { context, page } = await openConsole(browser, suite.server.baseUrl)
      try {
        await signIn(page, token)
        await settledTable(page, 'Stock')
        const key = (await api().keys.list()).find((k) => k.name === 'soon-revoked')!
        await api().keys.revoke(key.id)
        const words = 'The key was not accepted: it may have been revoked. Sign in again.'
        for (const { link, table } of [
          { link: 'Orders', table: 'Orders' },
          { link: 'Changes', table: 'Changes' },
          { link: 'Stock', table: 'Stock' },
        ]) {
          await page.getByRole('link', { name: link, exact: true }).click()
          await settledTable(page, table)
          assert.equal(await page.getByRole('alert').textContent(), words, link)
        }
        await page.reload()
        await page.getByLabel('API key').waitFor()
        assert.equal(await page.getByRole('alert').textContent(), words)
        assert.equal(await page.evaluate(() => sessionStorage.length), 0)
      } finally {
        await context.close()
      }
    })

    test('When the API refuses a key for a scope it lacks, then the page says which scope in words', async () => {
      // The console itself keeps a key from writes its scopes forbid (the buttons are disabled and say
      // why); what the API refuses for a scope is reached by a key that may write the stock but not read it.
      const token = await createKey(suite.database.url, 'write-only', ['inventory:write'])
      const { context, page, problems } = await openConsole(browser, suite.server.baseUrl)
      try {
        await signIn(page, token)
        await settledTable(page, 'Stock')
        assert.equal(
          await page.getByRole('alert').textContent(),
          'This key may not do that: This API key lacks the scope inventory:read, which this operation needs',
        )
        assert.equal(await rows(page, 'Stock').count(), 0)
        assert.deepEqual(
          problems.filter((p) => !/status of 403/.test(p)),
          [],
        )
      } finally {
        await context.close()
      }
    })

    for (const width of [1280, 390]) {
      test(`When staff use only the keyboard at ${width} pixels wide, then they sign in, reach every page, edit an entry with a reason and approve an order, the focus always shown`, async () => {
        const { context, page, problems } = await openConsole(browser, suite.server.baseUrl, width)
        const pet = width === 1280 ? 7 : 8
        try {
          // Signing in: the key field comes first.
          const field = await pressUntil(page, (f) => f.id === 'api-key', 'the API key field', 'Tab', 1)
          assert.ok(field.ringShown)
          await page.keyboard.type(suite.token)
          await page.keyboard.press('Enter')
          await page.getByRole('button', { name: 'Sign out' }).waitFor()
          await settledTable(page, 'Stock')

          // Every nav link in turn, each opening its page; focus moves to the page's heading (so a
          // screen reader says where the user now is), and the navigation is just before it.
          for (const [n, { link, table }] of [{ link: 'Stock', table: 'Stock' }, ...NAV.slice(0, -1)].entries()) {
            await pressUntil(page, named(link, 'a'), `the ${link} link`, n === 0 ? 'Tab' : 'Shift+Tab')
            await page.keyboard.press('Enter')
            await page.getByRole('heading', { name: link, exact: true }).waitFor()
            await settledTable(page, table)
            assert.equal(await page.getByRole('link', { name: link, exact: true }).getAttribute('aria-current'), 'page')
            const now = await focused(page)
            assert.ok(now.tag === 'h2' && now.name === link && now.inViewport, `focus on the ${link} heading, not ${describeFocus(now)}`)
          }
          await pressUntil(page, named('Stock', 'a'), 'the Stock link, backwards', 'Shift+Tab')
          await page.keyboard.press('Enter')
          await settledTable(page, 'Stock')

          // An edit: the dialog takes the focus, keeps it while open, and saves with a reason and a note.
          await pressUntil(page, named(`Edit ${pet}`, 'button'), `Edit ${pet}`)
          await page.keyboard.press('Enter')
          await page.getByRole('dialog').waitFor()
          await page.locator('#edit-quantity:not([readonly])').waitFor()
          let now = await focused(page)
          assert.ok(now.inDialog && now.id === 'edit-quantity', `the dialog focuses its first field, not ${describeFocus(now)}`)
          await page.keyboard.press('Control+A')
          await page.keyboard.type(String(pet * 11))
          await page.keyboard.press('Tab')
          assert.equal((await focused(page)).id, 'edit-reason')
          // From "count", two up: "arrival".
          await page.keyboard.press('ArrowUp')
          await page.keyboard.press('ArrowUp')
          assert.equal(await page.locator('#edit-reason').inputValue(), 'arrival')
          await page.keyboard.press('Tab')
          await page.keyboard.type('counted by keyboard')
          // Round the dialog both ways: the focus never lands on the page behind it.
          for (const key of ['Tab', 'Shift+Tab']) {
            const met: string[] = []
            for (let n = 0; n < 7; n++) {
              await page.keyboard.press(key)
              now = await focused(page)
              met.push(describeFocus(now))
              assert.ok(now.inDialog || !now.pageHasFocus, `${key} keeps the focus in the open dialog: ${met.join(', ')}`)
              if (now.inDialog) assert.ok(now.ringShown, `the focus ring is shown on ${describeFocus(now)}`)
            }
            for (const name of ['Quantity', 'Reason', 'Note', 'Cancel', 'Save'])
              assert.ok(
                met.some((m) => m.includes(`"${name}"`)),
                `${key} reaches ${name}: ${met.join(', ')}`,
              )
          }
          await page.screenshot({ path: `${ARTIFACTS}${backend.name}-keyboard-${width}.png` })
          // From the save until Enter on the next Edit button, the dialog's close event comes late (below).
          const releaseCloseEvents = await holdCloseEvents(page)
          await pressUntil(page, (f) => f.inDialog && f.name === 'Save', 'Save', 'Tab', 8)
          await page.keyboard.press('Enter')
          await page.getByRole('dialog').waitFor({ state: 'detached' })
          await page
            .getByRole('table', { name: 'Stock', exact: true })
            .locator(`tbody tr:has(a[href="#/pets/${pet}"]) td:nth-child(2):text-is("${pet * 11}")`)
            .waitFor()
          const changes: InventoryChange[] = []
          for await (const change of api().changes.list({ petId: BigInt(pet) })) changes.push(change)
          assert.deepEqual(
            [changes.at(-1)!.quantity, changes.at(-1)!.reason, changes.at(-1)!.note],
            [pet * 11, 'arrival', 'counted by keyboard'],
          )

          // The next entry's dialog opens, and stays open when the saved one's close event comes after the
          // Enter that opened it (once the page left that event to close its editor, and it closed this one).
          await pressUntil(page, named(`Edit ${pet + 1}`, 'button'), `Edit ${pet + 1}`)
          await page.keyboard.press('Enter')
          await page.getByRole('dialog').waitFor()
          await releaseCloseEvents()
          assert.equal(
            await page.getByRole('dialog', { name: `Edit pet ${pet + 1}` }).count(),
            1,
            `the dialog of pet ${pet + 1} is still open after pet ${pet}'s late close event`,
          )
          // Escape closes the dialog and gives the focus back to the button that opened it.
          await page.keyboard.press('Escape')
          await page.getByRole('dialog').waitFor({ state: 'detached' })
          now = await focused(page)
          assert.ok(named(`Edit ${pet + 1}`, 'button')(now) && now.ringShown, `focus back on Edit ${pet + 1}, not ${describeFocus(now)}`)
          assert.equal((await api().inventory.get(BigInt(pet + 1))).item.quantity, 10, 'nothing saved')

          // An order: placed from the form, then approved from its row.
          await pressUntil(page, named('Orders', 'a'), 'the Orders link', 'Shift+Tab')
          await page.keyboard.press('Enter')
          await settledTable(page, 'Orders')
          await pressUntil(page, (f) => f.id === 'order-pet', 'the order’s Pet ID')
          await page.keyboard.type('1')
          await page.keyboard.press('Tab')
          assert.equal((await focused(page)).id, 'order-quantity')
          await page.keyboard.press('Control+A')
          await page.keyboard.type('2')
          await page.keyboard.press('Enter')
          const placed = page.getByRole('status').getByText(/^Order \d+ placed: 2 of pet 1\.$/)
          await placed.waitFor()
          const orderId = /^Order (\d+)/.exec((await placed.textContent()) ?? '')![1]!
          await settledTable(page, 'Orders')
          await pressUntil(page, (f) => named('Approve', 'button')(f) && f.row === orderId, `Approve on order ${orderId}`)
          await page.keyboard.press('Enter')
          await page.getByRole('status').getByText(`Order ${orderId} is approved.`).waitFor()
          assert.equal((await api().orders.get(BigInt(orderId))).status, 'approved')
          await settledTable(page, 'Orders')
          await page.screenshot({ path: `${ARTIFACTS}${backend.name}-keyboard-orders-${width}.png` })
          assert.ok(
            await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth),
            'nothing overflows the width of the window',
          )
          assert.deepEqual(problems, [])
        } finally {
          await context.close()
        }
      })
    }

    test('When a dialog or a row’s action is finished with the keyboard, then the focus is not dropped to the page’s body', async () => {
      const { context, page } = await openConsole(browser, suite.server.baseUrl)
      const dropped: string[] = []
      /** Notes where the focus went after `what`, unless it is on an element `kept` accepts. */
      const check = async (what: string, kept: (f: Focused) => boolean) => {
        const now = await focused(page)
        if (!kept(now)) dropped.push(`${what}: focus on ${describeFocus(now)}`)
      }
      try {
        await pressUntil(page, (f) => f.id === 'api-key', 'the API key field', 'Tab', 1)
        await page.keyboard.type(suite.token)
        await page.keyboard.press('Enter')
        await settledTable(page, 'Stock')
        for (const close of ['Save', 'Cancel']) {
          await pressUntil(page, named('Edit 20', 'button'), 'Edit 20')
          await page.keyboard.press('Enter')
          await page.locator('#edit-quantity:not([readonly])').waitFor()
          await pressUntil(page, (f) => f.inDialog && f.name === close, close, 'Tab', 8)
          await page.keyboard.press('Enter')
          await page.getByRole('dialog').waitFor({ state: 'detached' })
          await settledTable(page, 'Stock')
          await check(`the edit dialog's ${close}`, named('Edit 20', 'button'))
        }
        await pressUntil(page, named('Orders', 'a'), 'the Orders link')
        await page.keyboard.press('Enter')
        await settledTable(page, 'Orders')
        await pressUntil(page, (f) => f.id === 'order-pet', 'the order’s Pet ID')
        await page.keyboard.type('1')
        await pressUntil(page, named('Place order', 'button'), 'Place order')
        await page.keyboard.press('Enter')
        const placed = page.getByRole('status').getByText(/^Order \d+ placed/)
        await placed.waitFor()
        await settledTable(page, 'Orders')
        await check('Place order', onElement)
        const orderId = /^Order (\d+)/.exec((await placed.textContent()) ?? '')![1]!
        await pressUntil(page, (f) => named('Approve', 'button')(f) && f.row === orderId, `Approve on order ${orderId}`)
        await page.keyboard.press('Enter')
        await page.getByRole('status').getByText(`Order ${orderId} is approved.`).waitFor()
        await settledTable(page, 'Orders')
        await check('Approve', onElement)
        await pressUntil(page, named('Keys', 'a'), 'the Keys link', 'Shift+Tab')
        await page.keyboard.press('Enter')
        await settledTable(page, 'Keys')
        await pressUntil(page, (f) => f.id === 'key-name', 'the key’s Name')
        await page.keyboard.type('revoked-by-keyboard')
        await pressUntil(page, named('Create key', 'button'), 'Create key')
        await page.keyboard.press('Enter')
        await page.getByRole('button', { name: 'Revoke revoked-by-keyboard' }).waitFor()
        await pressUntil(page, named('Revoke revoked-by-keyboard', 'button'), 'Revoke')
        await page.keyboard.press('Enter')
        await page.keyboard.press('Enter')
        // Its row goes once the revoke is answered and the list read again.
        await (await settledTable(page, 'Keys')).getByText('revoked-by-keyboard', { exact: true }).waitFor({ state: 'detached' })
        await check('Confirm revoking', onElement)
        assert.deepEqual(dropped, [])
      } finally {
        await context.close()
      }
    })
  })
}
