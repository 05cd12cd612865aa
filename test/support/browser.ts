// Debian's Chromium driven by playwright-core, for the tests of what runs in a browser (the client,
// the console). .ci/run installs the package `chromium` when it is missing; elsewhere a machine
// without it skips these tests, and CI fails them.
import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Why the browser tests cannot run here, or undefined when they can. */
export function browserUnavailable(): string | undefined {
  // .ci/run's second Node.js pass: Chromium and the console's bundle are the same on either Node.js,
  // and the service under them is tested on both by every other suite.
  if (process.env.TEST_BROWSER === 'skip') return 'TEST_BROWSER=skip'
  if (existsSync(CHROMIUM)) return undefined
  const why = `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`
  if (process.env.CI) throw new Error(`CI must run the browser tests: ${why}`)
  return why
}

export function launchBrowser(): Promise<Browser> {
  // As root (CI, containers) Chromium refuses its sandbox.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
}
