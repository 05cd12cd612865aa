import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import type { Config } from './config.js'
import { KeysService } from './keys/keys.service.js'
import { openStorage } from './storage/open-storage.js'

/** How long in-flight requests get to finish after SIGTERM/SIGINT before the process gives up. */
const SHUTDOWN_GRACE_MS = 10_000

export async function serve(config: Config): Promise<FastifyInstance> {
  const storage = await openStorage(config)
  const app = await buildApp(config, { storage })
  app.addHook('onClose', () => storage.close())

  const first = await new KeysService(storage).createFirstKeyIfNone()
  if (first) {
    // Printed once, outside the JSON logs, on stderr: the only time this token is ever shown.
    process.stderr.write(
      `\nCreated the first API key '${first.key.name}'. It is shown only this once:\n\n  ${first.token}\n\n` +
        `Create more with: npx petstore keys create --name NAME\n\n`,
    )
  }

  await app.listen({ port: config.port, host: config.host })

  closeWithGrace({ delay: SHUTDOWN_GRACE_MS }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an unexpected error')
    else app.log.info({ signal }, 'shutting down')
    await app.close()
  })
  return app
}
