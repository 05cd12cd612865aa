// The release before locations (issue 50), which the upgrade test (test/operations/upgrade-locations.test.ts)
// runs beside this one. Run as a script (`node dist/bench/previous-release.js`), it builds it beside the
// checkout ahead of the tests (.ci/run does), so that its build does not share the cores with them.
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { prepareBuild } from './baseline-build.js'

/** main as stop 55 left it: the last commit before issue 50. */
export const PREVIOUS_RELEASE = '44df29e9cfcbffbb84be25c87732d1eea86f84ab'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { cli } = await prepareBuild(ROOT, PREVIOUS_RELEASE, (line) => console.log(line))
  console.log(`the previous release: ${cli}`)
}
