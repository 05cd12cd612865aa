// tsc copies only .ts output; the SQL migrations are read at run time from beside the compiled storage code.
import { chmodSync, cpSync } from 'node:fs'

for (const dialect of ['sqlite', 'postgres']) {
  cpSync(`src/storage/${dialect}/migrations`, `dist/src/storage/${dialect}/migrations`, { recursive: true })
}
// The package's bin: tsc writes it without the execute bit, and npx runs it directly.
chmodSync('dist/src/cli.js', 0o755)
