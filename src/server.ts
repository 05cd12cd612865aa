import closeWithGrace from 'close-with-grace'
import cluster from 'node:cluster'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import type { Config } from './config.js'
import { KeysService } from './keys/keys.service.js'
import { SHUTDOWN_MESSAGE, runPrimary } from './cluster.js'
import { openStorage } from './storage/open-storage.js'
import type { Storage } from './storage/storage.js'

/**
 * `petstore serve`: one process, or with workers > 1 a node:cluster primary and N workers. The
 * database is migrated and the first key made once, before any worker starts.
 */
export async function serve(config: Config): Promise<void> {
  if (cluster.isWorker) {
    await listen(config)
    return
  }
  const storage = await openStorage(config)
  await printFirstKey(storage)
  if (config.workers > 1) {
    await storage.close()
    await runPrimary(config, config.workers)
    return
  }
  await listen(config, storage)
}

async function printFirstKey(storage: Storage) {
  const first = await new KeysService(storage).createFirstKeyIfNone()
  if (!first) return
  // Printed once, outside the JSON logs, on stderr: the only time this token is ever shown.
  process.stderr.write(
    `\nCreated the first API key '${first.key.name}'. It is shown only this once:\n\n  ${first.token}\n\n` +
      `Create more with: npx petstore keys create --name NAME\n\n`,
  )
}

async function listen(config: Config, opened?: Storage): Promise<FastifyInstance> {
  const storage = opened ?? (await openStorage(config))
  const app = await buildApp(config, { storage })
  app.addHook('onClose', () => storage.close())

  await app.listen({ port: config.port, host: config.host })

  const grace = closeWithGrace(
    // A worker shuts down once however often it is asked: a Ctrl-C reaches the whole process group,
    // and the primary asks again (close-with-grace would take the second signal for a panic).
    { delay: config.shutdownGraceMs, skip: cluster.isWorker ? ['SIGINT', 'SIGTERM'] : [] },
    async ({ signal, err }) => {
      if (err) app.log.error({ err }, 'shutting down after an unexpected error')
      else app.log.info({ signal }, 'shutting down')
      await app.close()
    },
  )
  if (cluster.isWorker) {
    let asked = false
    const stop = () => {
      if (!asked) void grace.close()
      asked = true
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
    process.on('message', (message) => message === SHUTDOWN_MESSAGE && stop())
  }
  return app
}
