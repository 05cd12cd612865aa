// The console's pet page in Debian's Chromium, against a live service on each backend: a pet's entry,
// its quantity over time drawn from the ledger, and its Changes table newest first, paged older; a
// petId above 2^53 exactly; an unknown pet in words. Screenshots at 1280 and 390 pixels go to
// test-artifacts/console/.
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
const ABOVE_DOUBLE = 9007199254740993n // 2^53 + 1: a double would round it to ...992
const skip = browserUnavailable()

/** What the Changes table shows for a ledger row: its ISO time, then the cells after When. */
const expectedRow = (c: InventoryChange) => [
  c.at,
  c.reason,
  c.previousQuantity === null ? '—' : String(c.previousQuantity),
  String(c.quantity),
  c.note ?? '—',
  c.orderId === null ? '—' : String(c.orderId),
  c.keyId === null ? '—' : String(c.keyId),
]

async function shownRows(page: Page) {
  const table = await settledTable(page, 'Changes')
  return table.locator('tbody tr').evaluateAll((rows) =>
    rows.map((row) => {
      const cells = [...row.querySelectorAll('td')]
      return [cells[0]!.querySelector('time')!.getAttribute('datetime')!, ...cells.slice(1).map((cell) => cell.textContent!.trim())]
    }),
  )
}

/** The chart's points as drawn (oldest first), and its step line's path data. */
async function drawn(page: Page) {
  const chart = page.getByRole('img', { name: 'Quantity over time' })
  await chart.waitFor()
  const points = await chart
    .locator('circle')
    .evaluateAll((circles) =>
      circles.map((c) => ({ x: Number(c.getAttribute('cx')), y: Number(c.getAttribute('cy')), q: Number(c.dataset.quantity) })),
    )
  const path = (await chart.locator('path.line').getAttribute('d')) ?? ''
  return { chart, points, path }
}

/** The chart follows the data: one point per change, in the ledger's order, higher quantities higher up. */
function assertChartFollows(points: { x: number; y: number; q: number }[], path: string, oldestFirst: InventoryChange[]) {
  assert.deepEqual(
    points.map((p) => p.q),
    oldestFirst.map((c) => c.quantity),
  )
  assert.equal(path.match(/V/g)?.length ?? 0, oldestFirst.length - 1, 'a step (level, then up or down) per change after the first')
  for (let i = 1; i < points.length; i++) assert.ok(points[i]!.x >= points[i - 1]!.x, 'time runs left to right')
  for (const a of points)
    for (const b of points) {
      if (a.q > b.q) assert.ok(a.y < b.y, `quantity ${a.q} is drawn above ${b.q}`)
      if (a.q === b.q) assert.equal(a.y, b.y)
    }
}

for (const backend of BACKENDS) {
  describe(`console pet page (${backend.name})`, { skip }, () => {
    const suite = useSuite(backend, {
      seed: [
        { petId: 1, quantity: 10, status: 'available' },
        { petId: 2, quantity: 100, status: 'pending' },
        { petId: String(ABOVE_DOUBLE) as unknown as number, quantity: 5, status: 'sold' },
      ],
    })
    let browser: Browser
    before(async () => {
      browser = await launchBrowser()
      mkdirSync(ARTIFACTS, { recursive: true })
    })
    after(async () => browser?.close())
    const api = () => createClient({ baseUrl: `${suite.server.baseUrl}/v1`, token: suite.token })
    const ledger = async (petId: bigint) => {
      const rows: InventoryChange[] = []
      for await (const change of api().changes.list({ after: 0n, petId })) rows.push(change)
      return rows
    }

    async function petPage(petId: bigint | string, width = 1280) {
      const opened = await openConsole(browser, suite.server.baseUrl, width)
      await signIn(opened.page, suite.token)
      await opened.page.goto(`${suite.server.baseUrl}/console/#/pets/${petId}`)
      await opened.page.getByRole('heading', { name: `Pet ${petId}`, exact: true }).waitFor()
      return opened
    }

    test('When a pet with history is opened, then its entry, its Changes newest first with reason, from, to, note, order and key, and a chart of every change are shown', async () => {
      const client = api()
      await client.inventory.set(1n, { quantity: 12, reason: 'arrival', note: 'crate 7' })
      await client.inventory.set(1n, { quantity: 11, reason: 'count', note: 'shelf count: one missing' })
      await client.inventory.set(1n, { quantity: 15, reason: 'return' })
      const order = await client.orders.place({ petId: 1n, quantity: 3 })
      await client.inventory.set(1n, { quantity: 20, reason: 'adjustment', note: 'Ünïcode ✓ <b>not bold</b>' })
      const rows = await ledger(1n)
      assert.equal(rows.length, 6)
      assert.ok(rows.some((c) => c.reason === 'order' && c.orderId === order.id))

      const { context, page, problems } = await petPage(1n)
      try {
        await page.locator('dd.quantity').getByText('20', { exact: true }).waitFor()
        assert.equal(await page.locator('dd.pet-status').textContent(), 'available')
        assert.deepEqual(await shownRows(page), rows.slice().reverse().map(expectedRow))
        const orderRow = (await shownRows(page)).find((row) => row[1] === 'order')!
        assert.deepEqual(orderRow.slice(2), ['15', '12', '—', String(order.id), String(rows.at(-1)!.keyId)])
        // When is readable, in the browser's locale, not the raw ISO text.
        const when = await page.locator('tbody tr').first().locator('td').first().textContent()
        assert.notEqual(when, rows.at(-1)!.at)
        assert.match(when ?? '', /\d/)

        const { chart, points, path } = await drawn(page)
        assertChartFollows(points, path, rows)
        assert.match((await chart.locator('title').textContent()) ?? '', /6 changes.*between 10 and 20, now 20/)
        assert.equal(await page.getByRole('button', { name: 'Next page' }).isDisabled(), true)
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-pet-1280.png`, fullPage: true })
        assert.deepEqual(problems, [], 'no console errors or CSP violations')
      } finally {
        await context.close()
      }
    })

    test('When a pet has more than 50 changes, then Next page (by keyboard) shows the older ones and Previous page comes back; the chart draws all of them', async () => {
      const client = api()
      for (let i = 1; i <= 60; i++)
        await client.inventory.set(2n, { quantity: 100 + ((i * 37) % 50), reason: i % 2 ? 'count' : 'arrival', note: `step ${i}` })
      const newestFirst = (await ledger(2n)).slice().reverse()
      assert.equal(newestFirst.length, 61)

      const { context, page, problems } = await petPage(2n, 390)
      try {
        assert.deepEqual(await shownRows(page), newestFirst.slice(0, 50).map(expectedRow))
        const { points, path } = await drawn(page)
        assertChartFollows(points, path, newestFirst.slice().reverse())
        await page.screenshot({ path: `${ARTIFACTS}${backend.name}-pet-390.png` })

        await page.getByRole('button', { name: 'Next page' }).focus()
        await page.keyboard.press('Enter')
        assert.deepEqual(await shownRows(page), newestFirst.slice(50).map(expectedRow))
        await page.getByText('Page 2').waitFor()
        assert.equal(await page.getByRole('button', { name: 'Next page' }).isDisabled(), true)
        await page.getByRole('button', { name: 'Previous page' }).focus()
        await page.keyboard.press('Enter')
        await page.getByText('Page 1').waitFor()
        assert.deepEqual(await shownRows(page), newestFirst.slice(0, 50).map(expectedRow))
        assert.deepEqual(problems, [], 'no console errors or CSP violations')
      } finally {
        await context.close()
      }
    })

    test('When a pet above 2^53 is opened, then its id, entry and changes are exact', async () => {
      await api().inventory.set(ABOVE_DOUBLE, { quantity: 6, reason: 'count', note: 'exact' })
      const rows = await ledger(ABOVE_DOUBLE)
      assert.equal(rows.length, 2)
      const { context, page, problems, requests } = await petPage(ABOVE_DOUBLE)
      try {
        await page.locator('dd.quantity').getByText('6', { exact: true }).waitFor()
        assert.equal(await page.locator('dd.pet-status').textContent(), 'sold')
        assert.deepEqual(await shownRows(page), rows.slice().reverse().map(expectedRow))
        const { points, path } = await drawn(page)
        assertChartFollows(points, path, rows)
        assert.ok(requests.some((url) => url.includes(`/inventory/${ABOVE_DOUBLE}`)))
        assert.ok(requests.some((url) => url.includes(`petId=${ABOVE_DOUBLE}`)))
        assert.ok(!requests.some((url) => url.includes('9007199254740992')), 'never rounded')
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    })

    test('When an unknown pet is opened, then the page says there is no entry for it and that no changes are recorded', async () => {
      const { context, page, problems } = await petPage(424242n)
      try {
        await page.getByRole('alert').getByText('No inventory entry for pet 424242.').waitFor()
        await page.getByText('nothing to chart').waitFor()
        assert.equal(await page.getByRole('img', { name: 'Quantity over time' }).count(), 0)
        assert.equal((await shownRows(page)).length, 0)
        // The 404 is the page's answer, not an error of the page: the browser logs failed requests as
        // console errors, so only that one is allowed.
        assert.deepEqual(
          problems.filter((text) => !/404/.test(text)),
          [],
        )
      } finally {
        await context.close()
      }
    })
  })
}
