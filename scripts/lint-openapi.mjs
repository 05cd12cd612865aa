// `npm run lint:openapi`: Spectral (.spectral.yaml, spectral:oas) and Redocly (redocly.yaml, recommended)
// on the committed openapi.json. Any warning fails, as an error does: Spectral with --fail-severity=warn;
// Redocly exits non-zero on errors only, so the totals of its JSON report decide. Neither fetches
// anything: Redocly's telemetry and its check for a newer version are off.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
// The packages' own bin scripts, run with this Node.js.
const run = (bin, args, options) =>
  spawnSync(process.execPath, [fileURLToPath(new URL(`../node_modules/.bin/${bin}`, import.meta.url)), ...args], {
    cwd: root,
    env,
    ...options,
  })

const spectral = run('spectral', ['lint', 'openapi.json', '--ruleset=.spectral.yaml', '--fail-severity=warn'], { stdio: 'inherit' })

const redocly = run('redocly', ['lint', 'openapi.json', '--config=redocly.yaml', '--format=json', '--max-problems=1000'], {
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
})
let failed = spectral.status !== 0
try {
  const { totals, problems } = JSON.parse(redocly.stdout)
  for (const { severity, ruleId, message, location } of problems) {
    console.log(`openapi.json ${location[0]?.pointer ?? ''}  ${severity}  ${ruleId}  ${message}`)
  }
  console.log(`Redocly: ${totals.errors} errors, ${totals.warnings} warnings`)
  failed ||= redocly.status !== 0 || totals.errors + totals.warnings > 0
} catch {
  console.error(`Redocly gave no report (exit ${redocly.status}):\n${redocly.stdout}`)
  failed = true
}
process.exit(failed ? 1 : 0)
