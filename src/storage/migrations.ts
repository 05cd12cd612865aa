import { readdirSync, readFileSync } from 'node:fs'

export interface Migration {
  version: number
  name: string
  sql: string
}

/** A dialect's migrations: files named NNN_description.sql in `dir`; once released, a file never changes. */
export function loadMigrations(dir: URL): Migration[] {
  return readdirSync(dir)
    .filter((file) => /^\d+_[\w-]+\.sql$/.test(file))
    .map((file) => ({
      version: Number.parseInt(file, 10),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(new URL(file, dir), 'utf8'),
    }))
    .sort((a, b) => a.version - b.version)
}
