// tsc copies only .ts output; the SQL migrations are read at run time from beside the compiled storage code.
import { cpSync } from 'node:fs'

for (const dialect of ['sqlite', 'postgres']) {
  cpSync(`src/storage/${dialect}/migrations`, `dist/src/storage/${dialect}/migrations`, { recursive: true })
}
