// Database backends the service is benchmarked on. Each run gets a fresh, empty database.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface BenchDatabase {
  /** Value for the service's DATABASE_URL. */
  readonly url: string
  /** Removes the database; called after the service using it has stopped. */
  dispose(): Promise<void>
}

export interface Backend {
  /** Short name, shown in the results as `service/<name>`. */
  readonly name: string
  createDatabase(label: string): Promise<BenchDatabase>
}

export const sqliteBackend: Backend = {
  name: 'sqlite',
  async createDatabase(label) {
    const dir = await mkdtemp(join(tmpdir(), `petstore-bench-${label}-`))
    return {
      url: `sqlite:${join(dir, 'bench.db')}`,
      dispose: () => rm(dir, { recursive: true, force: true }),
    }
  },
}

// To add PostgreSQL later: a Backend whose createDatabase() connects with `pg` to
// postgres://postgres@127.0.0.1:5432/postgres, runs CREATE DATABASE <fresh name>, returns
// url postgres://postgres@127.0.0.1:5432/<fresh name>, and whose dispose() runs
// DROP DATABASE <fresh name> WITH (FORCE). Then append it to BACKENDS.
export const BACKENDS: readonly Backend[] = [sqliteBackend]
