import type { Browser, BrowserContext, Page } from 'playwright-core'

export interface ConsolePage {
  context: BrowserContext
  page: Page
  /** Every URL the page requested. */
  requests: string[]
  /** Console errors and uncaught exceptions of the page. */
  problems: string[]
}

/** A fresh browser context (its own storage) at the service's /console/, watching what the page requests. */
export async function openConsole(browser: Browser, baseUrl: string, width = 1280): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport: { width, height: 900 } })
  const page = await context.newPage()
  const requests: string[] = []
  const problems: string[] = []
  page.on('request', (r) => requests.push(r.url()))
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()))
  page.on('pageerror', (e) => problems.push(String(e)))
  await page.goto(`${baseUrl}/console/`)
  return { context, page, requests, problems }
}

export async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('API key').fill(token)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('button', { name: 'Sign out' }).waitFor()
}

/** The named table once its rows are loaded (aria-busy false). */
export async function settledTable(page: Page, name: string) {
  const table = page.getByRole('table', { name, exact: true })
  await page.locator(`table[aria-label="${name}"][aria-busy="false"]`).waitFor()
  return table
}
