// Ceiling: a minimal Fastify 5 app doing the benchmarked jobs from memory, run as its own process.
// Same job and same env as bare-server.ts: an onRequest hook checks the bearer token (a string
// comparison), GET /v1/inventory sends precomputed bytes, PATCH and POST /v1/store/orders (placeOrder)
// update an in-memory Map. No logger, no schemas: Fastify's routing, hooks, JSON body parser and reply are what it adds over node:http.
// Env: see ceiling-job.ts.
import Fastify from 'fastify'
import { JSON_TYPE, MAX_QUANTITY, ORDERS_PATH, byId, expectedAuth, host, listBody, placeOrder, port } from './ceiling-job.js'

const READY_PATH = '/v1/openapi.json'

const app = Fastify({ logger: false, forceCloseConnections: true })

app.addHook('onRequest', async (request, reply) => {
  if (request.url === READY_PATH) return
  if (request.headers.authorization !== expectedAuth) {
    await reply.code(401).send({ statusCode: 401, error: 'Unauthorized', message: 'Unauthorized' })
  }
})

app.get(READY_PATH, async () => ({})) // readiness probe, same path as the service's

app.get('/v1/inventory', (_request, reply) => {
  void reply.header('content-type', JSON_TYPE).send(listBody)
})

app.patch<{ Params: { petId: string }; Body: { quantity?: unknown } | null }>('/v1/inventory/:petId', (request, reply) => {
  const petId = Number(request.params.petId)
  const quantity = request.body?.quantity
  if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 0 || quantity > MAX_QUANTITY) {
    void reply.code(400).send({ statusCode: 400, error: 'Bad Request', message: 'Bad Request' })
    return
  }
  const item = byId.get(petId)
  if (item === undefined) {
    void reply.code(404).send({ statusCode: 404, error: 'Not Found', message: 'Not Found' })
    return
  }
  const updated = { petId, quantity, status: item.status }
  byId.set(petId, updated)
  void reply.send(updated)
})

app.post<{ Body: { petId?: unknown; quantity?: unknown } | null }>(ORDERS_PATH, (request, reply) => {
  const body = request.body
  const outcome = typeof body === 'object' && body !== null ? placeOrder(body.petId, body.quantity) : placeOrder(undefined, undefined)
  if (outcome.status === 201) void reply.code(201).header('location', outcome.location).send(outcome.order)
  else void reply.code(outcome.status).send(outcome.error)
})

await app.listen({ port, host })
process.once('SIGTERM', () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  )
})
