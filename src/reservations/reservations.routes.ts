import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { RESERVATION_LIMITS, RESERVATION_STATUSES, type ReservationStatus } from '../domain.js'
import { InvalidInputError } from '../errors.js'
import { API_PREFIX, API_ROUTE_DEPENDENCIES } from '../http/api-prefix.js'
import { errorResponses } from '../http/error.schema.js'
import { exactInt64, registerExactJsonParser } from '../http/exact-json.js'
import { idempotencyHeaders, REPLAYED_HEADER } from '../http/idempotency.js'
import { Int64Schema } from '../http/int64.schema.js'
import { sendJsonText } from '../http/json-reply.js'
import { NEXT_LINK_HEADER, PageLimitSchema, page } from '../http/paging.js'
import { requestActor } from '../http/plugins/auth.js'
import { documentRateLimits } from '../http/rate-limit.js'
import { requires } from '../http/scopes.js'
import type { HoldLine } from '../stock/writes.js'
import { reservationJson } from './reservation.json.js'
import { ReservationIdParamsSchema } from './reservation.schema.js'
import type { ReservationsService } from './reservations.service.js'

const RESERVATIONS_PATH = `${API_PREFIX}/store/reservations`

const ListQuerySchema = Type.Object(
  {
    status: Type.Optional(
      Type.Unsafe<ReservationStatus>({ type: 'string', enum: [...RESERVATION_STATUSES], description: 'Only holds with this status.' }),
    ),
    limit: Type.Optional(PageLimitSchema),
    after: Type.Optional(
      Int64Schema(
        'Return holds with an id above this one, from 0 (default 0: from the first). The next page continues after the last id of this one.',
        { minimum: 0, default: 0, examples: [3107n] },
      ),
    ),
  },
  { additionalProperties: false },
)

const ENDED =
  '`reservation_expired`, `reservation_released` or `reservation_confirmed`: the hold ended that way before (a hold whose ' +
  '`expiresAt` has passed expires now, if the sweep had not come yet, and is answered `reservation_expired`). Nothing changed.'

/** The lines of a hold's body, each petId read exactly; a pet on two lines is refused, naming both. */
function holdLines(body: { lines: object[] }): HoldLine[] {
  const seen = new Map<bigint, number>()
  return body.lines.map((line, i) => {
    const petId = exactInt64(line, 'petId')
    if (petId === undefined) throw new InvalidInputError(`body.lines[${i}].petId must be a decimal int64 integer (no fraction or exponent)`)
    const first = seen.get(petId)
    if (first !== undefined)
      throw new InvalidInputError(`body.lines[${i}].petId: pet ${petId} is on lines[${first}] already; a hold takes each pet on one line`)
    seen.set(petId, i)
    const { quantity, locationId } = line as { quantity: number; locationId?: number }
    return locationId === undefined ? { petId, quantity } : { petId, quantity, locationId }
  })
}

export interface ReservationsRoutesOptions {
  reservations: ReservationsService
}

/** Holds of stock for a checkout; registered under API_PREFIX. */
const routes: FastifyPluginAsyncTypebox<ReservationsRoutesOptions> = async (app, { reservations }) => {
  app.addHook('onRequest', app.authenticate)
  documentRateLimits(app)
  registerExactJsonParser(app)

  app.post(
    '/store/reservations',
    {
      schema: {
        operationId: 'createReservation',
        security: requires('orders:write'),
        summary: 'Hold stock for a checkout (experimental)',
        description:
          `Holds 1 to ${RESERVATION_LIMITS.lines} lines of stock, each of a different pet, in one transaction: every line or none. ` +
          "The held units leave each entry's `quantity` at once (the inventory shows what can still be sold), with a ledger row " +
          'of reason `reservation` a line. The hold gives them back by itself within 2 s of `expiresAt` (from ' +
          `${RESERVATION_LIMITS.minSeconds} s to ${RESERVATION_LIMITS.maxSeconds} s from now, ${RESERVATION_LIMITS.defaultSeconds} by default), ` +
          'whichever instance is up, unless it is confirmed (its lines become orders), released or extended first. The 201 is ' +
          'sent only after the hold is committed durably.\n\n**Experimental:** the request shape may change before this endpoint becomes stable.',
        tags: ['store'],
        'x-stability': 'experimental',
        headers: idempotencyHeaders('holds nothing'),
        body: Type.Ref('ReservationCreate'),
        response: {
          201: Type.Ref('Reservation', {
            description: 'The hold, active and committed.',
            headers: {
              Location: Type.String({ description: "The hold's URL, path-absolute: `/v1/store/reservations/{reservationId}`." }),
              ...REPLAYED_HEADER,
            },
          }),
          ...errorResponses(400, 401, 403, 404, 413, 415, 500, 503),
          409: Type.Ref('Error', {
            description:
              '`insufficient_stock`: some lines ask for more than their entry holds; the message names each one (`lines[2] (pet 7: ' +
              '1 in stock, 2 asked)`), and nothing was held. `idempotency_key_reused`: the Idempotency-Key was used with another body.',
          }),
        },
      },
    },
    async (request, reply) => {
      const body = request.body as { lines: object[]; expiresInSeconds?: number; reference?: string }
      const lines = holdLines(body)
      const answer = await reservations.hold(
        lines,
        body.expiresInSeconds ?? RESERVATION_LIMITS.defaultSeconds,
        body.reference ?? null,
        requestActor(request),
        request.headers['idempotency-key'],
      )
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      if (answer.error) throw answer.error
      return sendJsonText(
        reply.code(201).header('location', `${RESERVATIONS_PATH}/${answer.reservation.id}`),
        reservationJson(answer.reservation),
      )
    },
  )

  app.get(
    '/store/reservations',
    {
      schema: {
        operationId: 'listReservations',
        security: requires('orders:read'),
        summary: 'List holds',
        description: 'The holds, by id ascending, a page at a time; a `Link` header with rel="next" is sent while more remain.',
        tags: ['store'],
        querystring: ListQuerySchema,
        response: {
          200: Type.Array(Type.Ref('Reservation'), { description: 'Up to `limit` holds, by id.', headers: NEXT_LINK_HEADER }),
          ...errorResponses(400, 401, 403, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { status, limit, after } = request.query as { status?: ReservationStatus; limit: number; after: bigint }
      const rows = await reservations.list({ after, limit: limit + 1, status })
      const items = page(reply, rows, limit, RESERVATIONS_PATH, (r) => r.id, { status })
      return sendJsonText(reply, `[${items.map(reservationJson).join(',')}]`)
    },
  )

  app.get(
    '/store/reservations/:reservationId',
    {
      schema: {
        operationId: 'getReservation',
        security: requires('orders:read'),
        summary: 'Get one hold',
        description: 'One hold, with its status and, once confirmed, the order each line became. An id that names no hold is 404.',
        tags: ['store'],
        params: ReservationIdParamsSchema,
        response: { 200: Type.Ref('Reservation', { description: 'The hold.' }), ...errorResponses(400, 401, 403, 404, 414, 500, 503) },
      },
    },
    async (request, reply) => sendJsonText(reply, reservationJson(await reservations.get(request.params.reservationId))),
  )

  const action = (
    name: 'extend' | 'release' | 'confirm',
    operationId: string,
    summary: string,
    description: string,
    extra: Record<string, unknown> = {},
  ) =>
    app.post(
      `/store/reservations/:reservationId/${name}`,
      {
        schema: {
          operationId,
          security: requires('orders:write'),
          summary,
          description: `${description} Only an active hold whose \`expiresAt\` has not passed; the 200 is sent only after the change is committed durably.`,
          tags: ['store'],
          'x-stability': 'experimental',
          params: ReservationIdParamsSchema,
          ...extra,
          response: {
            200: Type.Ref('Reservation', { description: 'The hold as the change left it.' }),
            ...errorResponses(400, 401, 403, 404, 413, 414, 415, 500, 503),
            409: Type.Ref('Error', {
              description:
                name === 'release' ? `${ENDED} \`stock_overflow\`: giving a line back would take its pet past 2147483647.` : ENDED,
            }),
          },
        },
      },
      async (request, reply) => {
        const { reservationId } = request.params as { reservationId: bigint }
        const seconds = name === 'extend' ? (request.body as { expiresInSeconds: number }).expiresInSeconds : undefined
        return sendJsonText(reply, reservationJson(await reservations.act(reservationId, name, requestActor(request), seconds)))
      },
    )

  action(
    'extend',
    'extendReservation',
    "Extend a hold's expiry (experimental)",
    'Sets a new `expiresAt`, counted from now (shorter or longer than the one it had).',
    { body: Type.Ref('ReservationExtend') },
  )
  action(
    'release',
    'releaseReservation',
    'Release a hold (experimental)',
    'Gives every held unit back to its entry now, a ledger row of reason `release` a line.',
  )
  action(
    'confirm',
    'confirmReservation',
    'Confirm a hold into orders (experimental)',
    'Turns each line into a placed order, in one transaction, with no new stock check (the units are held already): the ' +
      "lines' `orderId` name them, and each has a ledger row of reason `order` that moves no units. At most once.",
  )
}

export const reservationsRoutes = fp(routes, {
  name: 'petstore-reservations-routes',
  dependencies: [...API_ROUTE_DEPENDENCIES],
  encapsulate: true,
})
