// The console's first page at 1,000,000 entries (the console issue's goal: "a store of 1,000,000
// entries shows its first page within a second of the page asking for it"): for each backend, a fresh
// database with 1,000,000 inventory entries (`petstore import inventory`), the service on it, and
// /console/ in Debian's Chromium (playwright-core, as the console tests drive it). Timed in the page:
// from signing in to the Stock table's first row, then SAMPLES times from clicking the Stock link (on
// the Orders page) to the frame that paints the Stock table's first row. A measurement, not a test.
// Results go into bench/RESULTS.md's console-first-page section; run.ts runs it when BENCH_SCENARIOS
// names `console`, and `BENCH_SCENARIOS=console` alone runs nothing else.
import type { Browser, Page } from 'playwright-core'
import { browserUnavailable, launchBrowser } from '../test/support/browser.js'
import type { Backend } from './backends.js'
import { envNumber, FIRST_PET_ID, HUGE_INVENTORY, IMPORT_TIMEOUT_MS } from './config.js'
import { benchCommand } from './live.js'
import { runNode, type ServerHandle } from './procs.js'
import { mdTable, textTable } from './report.js'
import { type Goal, readSection, renderSection, sectionConsole, writeSection } from './results-section.js'
import { createKey, makeDataset, serve, serviceEnv, type Dataset } from './targets.js'

/** `console` in BENCH_SCENARIOS runs this section; it is not part of a default run (a 1,000,000-entry import per backend). */
export const CONSOLE_GROUP = 'console'

export function selectConsole(ids: readonly string[] | undefined): boolean {
  return ids?.includes(CONSOLE_GROUP) ?? false
}

/** True when BENCH_SCENARIOS names this section and nothing else: then run.ts runs it alone. */
export function consoleOnly(ids: readonly string[] | undefined): boolean {
  return ids !== undefined && ids.length > 0 && ids.every((id) => id === CONSOLE_GROUP)
}

/** Timed clicks on the Stock link per backend (env BENCH_CONSOLE_SAMPLES). */
export const SAMPLES = Math.floor(envNumber('BENCH_CONSOLE_SAMPLES', 5, 1))
/** The goal: the first row on screen within this of the page asking for it, every time (judged on the max). */
export const GOAL_MS = 1000
/** The console's page size (console/src/pages/stock.tsx). */
const PAGE_SIZE = 50
/** Bound on one timed wait in the page. */
const WAIT_MS = 30_000

export interface Sample {
  /** From the click (or the sign-in) to the frame that paints the first row. */
  ms: number
  /** The page's GET /v1/inventory?limit=50, from the browser's resource timing: start to the last byte. */
  requestMs: number | undefined
}

export interface ConsoleRow {
  backend: string
  entries: number
  importMs?: number
  signIn?: Sample
  clicks: Sample[]
  failure?: string
}

export interface ConsoleResult {
  date: string
  command: string
  loadAverage: number
  chromium: string
  backends: string[]
  rows: ConsoleRow[]
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))

// ---------------------------------------------------------------- the measurement, in the page

/**
 * Runs in the page: starts the clock, presses `trigger` (the Stock link, or the sign-in button), and
 * resolves at the first animation frame after the Stock table holds its first row and is no longer
 * busy (the frame that paints it), with the inventory request's resource timing.
 */
function timeFirstRow(page: Page, trigger: 'stock-link' | 'sign-in'): Promise<Sample> {
  return page.evaluate(
    ({ trigger, waitMs }) =>
      new Promise<Sample>((resolve, reject) => {
        performance.clearResourceTimings()
        const firstRow = () => document.querySelector('table[aria-label="Stock"][aria-busy="false"] tbody tr')
        const button =
          trigger === 'stock-link'
            ? document.querySelector<HTMLElement>('nav a[href="#/stock"]')
            : document.querySelector<HTMLElement>('main.sign-in button[type="submit"]')
        if (button === null) return reject(new Error(`no ${trigger} to press`))
        const done = () => {
          observer.disconnect()
          clearTimeout(timer)
          requestAnimationFrame(() => {
            const ms = performance.now() - started
            const request = performance
              .getEntriesByType('resource')
              .find((e) => /\/v1\/inventory\?/.test(e.name) && e.startTime >= started) as PerformanceResourceTiming | undefined
            resolve({ ms, requestMs: request ? request.responseEnd - request.startTime : undefined })
          })
        }
        const observer = new MutationObserver(() => firstRow() && done())
        const timer = setTimeout(() => {
          observer.disconnect()
          reject(new Error(`no Stock row within ${waitMs} ms of the ${trigger}`))
        }, waitMs)
        observer.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['aria-busy'] })
        const started = performance.now()
        button.click()
      }),
    { trigger, waitMs: WAIT_MS },
  )
}

/** What the table shows once timed: a full first page starting at the first pet, and a next page. */
async function checkFirstPage(page: Page, what: string): Promise<void> {
  const shown = await page.evaluate(() => ({
    rows: document.querySelectorAll('table[aria-label="Stock"] tbody tr').length,
    first: document.querySelector('table[aria-label="Stock"] tbody tr td')?.textContent ?? '',
    next: !(document.querySelector<HTMLButtonElement>('.pager button:last-child')?.disabled ?? true),
  }))
  if (shown.rows !== PAGE_SIZE || shown.first !== String(FIRST_PET_ID) || !shown.next)
    throw new Error(
      `${what}: the Stock table shows ${shown.rows} rows from pet ${shown.first} (next page ${shown.next ? 'enabled' : 'disabled'}), expected ${PAGE_SIZE} from pet ${FIRST_PET_ID} and a next page`,
    )
}

/** One backend: database, key, import, serve; sign in and time; stops and drops everything, whatever fails. */
async function consoleRun(
  cli: string,
  backend: Backend,
  dataset: Dataset,
  browser: Browser,
  log: (l: string) => void,
): Promise<ConsoleRow> {
  const row: ConsoleRow = { backend: backend.name, entries: dataset.items.length, clicks: [] }
  const label = `console / ${backend.name}`
  let server: ServerHandle | undefined
  const db = await backend.createDatabase('console-first-page')
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  try {
    const env = serviceEnv(db.url)
    const token = await createKey(cli, env)
    log(`${label}: importing ${dataset.items.length.toLocaleString('en-US')} entries`)
    const started = performance.now()
    await runNode(cli, ['import', 'inventory', dataset.file], env, IMPORT_TIMEOUT_MS)
    row.importMs = performance.now() - started
    log(`  imported in ${(row.importMs / 1000).toFixed(1)} s`)
    server = await serve(cli, backend, env)

    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(String(e)))
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()))
    await page.goto(`${server.baseUrl}/console/`)
    await page.getByLabel('API key').fill(token)
    row.signIn = await timeFirstRow(page, 'sign-in')
    await checkFirstPage(page, 'after signing in')
    log(`  sign-in to the first row: ${row.signIn.ms.toFixed(0)} ms`)
    for (let i = 0; i < SAMPLES; i++) {
      await page.getByRole('link', { name: 'Orders', exact: true }).click()
      await page.locator('table[aria-label="Orders"][aria-busy="false"]').waitFor({ timeout: WAIT_MS })
      const sample = await timeFirstRow(page, 'stock-link')
      await checkFirstPage(page, `click ${i + 1}`)
      row.clicks.push(sample)
      log(`  Stock link to the first row: ${sample.ms.toFixed(0)} ms (its request ${sample.requestMs?.toFixed(0) ?? '-'} ms)`)
    }
    if (errors.length > 0) throw new Error(`the page reported errors: ${errors.join('; ').slice(0, 500)}`)
  } catch (err) {
    row.failure = message(err)
    log(`  FAILED ${label}:\n${row.failure}`)
  } finally {
    await context.close().catch(() => {})
    try {
      await server?.stop()
    } catch (err) {
      row.failure ??= message(err)
    }
    await db.dispose()
  }
  return row
}

/** Upper bound on the section's run time, for run.ts's watchdog: per backend the import's bound and 3 minutes more. */
export function consoleBudgetMs(backends: number): number {
  return backends * (IMPORT_TIMEOUT_MS + 180_000) + 60_000
}

export async function runConsole(
  cli: string,
  backends: readonly Backend[],
  dir: string,
  log: (l: string) => void,
  loadAverage: number,
): Promise<ConsoleResult> {
  const unavailable = browserUnavailable()
  if (unavailable !== undefined) throw new Error(`the console section needs Chromium: ${unavailable}`)
  log(`console first page: generating ${HUGE_INVENTORY.toLocaleString('en-US')} entries`)
  const dataset = await makeDataset(dir, HUGE_INVENTORY)
  const browser = await launchBrowser()
  const result: ConsoleResult = {
    date: new Date().toISOString(),
    command: benchCommand(),
    loadAverage,
    chromium: browser.version(),
    backends: backends.map((b) => b.name),
    rows: [],
  }
  try {
    for (const backend of backends) result.rows.push(await consoleRun(cli, backend, dataset, browser, log))
  } finally {
    await browser.close()
  }
  return result
}

// ---------------------------------------------------------------- the report

const MARKS = { start: '<!-- console-first-page: start -->', end: '<!-- console-first-page: end -->' }
const ms = (v: number | undefined): string => (v === undefined ? '-' : v.toFixed(0))
const median = (values: readonly number[]): number | undefined => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0
    ? undefined
    : sorted.length % 2
      ? sorted[(sorted.length - 1) / 2]
      : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2
}
const max = (values: readonly number[]): number | undefined => (values.length === 0 ? undefined : Math.max(...values))

export function consoleGoals(r: ConsoleResult): Goal[] {
  return r.backends.map((backend) => {
    const row = r.rows.find((x) => x.backend === backend)
    const times =
      row === undefined || row.failure !== undefined ? [] : [...(row.signIn ? [row.signIn.ms] : []), ...row.clicks.map((c) => c.ms)]
    const worst = max(times)
    return {
      goal: `${backend}: a store of ${HUGE_INVENTORY.toLocaleString('en-US')} entries shows its first page within ${GOAL_MS} ms of the page asking for it (every time: sign-in and each click)`,
      measured: worst === undefined ? '-' : `at most ${ms(worst)} ms (${times.length} times)`,
      met: worst === undefined ? undefined : worst < GOAL_MS,
    }
  })
}

function table(r: ConsoleResult): string[][] {
  return [
    [
      'Backend',
      'Entries',
      'Import',
      'Sign-in to first row ms',
      'Stock link to first row ms, each',
      'median',
      'max',
      'its request ms, median',
    ],
    ...r.rows.map((x) => {
      const clicks = x.clicks.map((c) => c.ms)
      const requests = x.clicks.flatMap((c) => (c.requestMs === undefined ? [] : [c.requestMs]))
      return [
        x.backend,
        x.entries.toLocaleString('en-US'),
        x.importMs === undefined ? '-' : `${(x.importMs / 1000).toFixed(1)} s`,
        ms(x.signIn?.ms),
        clicks.length === 0 ? '-' : clicks.map(ms).join(', '),
        ms(median(clicks)),
        ms(max(clicks)),
        ms(median(requests)),
      ]
    }),
  ]
}

/** The console-first-page section of RESULTS.md (markdown, between its markers). */
export function renderConsole(r: ConsoleResult): string {
  return renderSection({
    marks: MARKS,
    title: 'Console first page',
    run: r,
    source: 'bench/console-first-page.ts',
    about:
      `Chromium ${r.chromium} (headless, 1280 × 900); backends ${r.backends.join(', ')}. How it is measured:` +
      ' [README.md](README.md#console-first-page). Each backend: a fresh database with the 1,000,000 entries imported by `petstore import inventory`,' +
      ` the service on it, /console/ signed in with an admin key; timed in the page from pressing Sign in, then ${SAMPLES} times from clicking the` +
      ' Stock link on the Orders page, to the animation frame after the Stock table holds its first row (of 50).',
    body: [...mdTable(table(r)), ''],
    failures: r.rows.flatMap((x) => (x.failure === undefined ? [] : [{ what: x.backend, failure: x.failure }])),
    goalsTitle: 'Console goal',
    goals: consoleGoals(r),
  })
}

export function consoleReportText(r: ConsoleResult): string {
  return sectionConsole({ blocks: [textTable(table(r))], goals: consoleGoals(r) })
}

/** RESULTS.md's console-first-page section as it stands (markers included), or undefined. */
export const readConsoleSection = (path: string): Promise<string | undefined> => readSection(path, MARKS)

/** Puts `section` into RESULTS.md in place of its console-first-page section, or after everything else. */
export const writeConsoleSection = (path: string, section: string): Promise<void> => writeSection(path, section, MARKS)
