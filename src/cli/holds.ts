import { CLI_ACTOR, RESERVATION_STATUSES, type Reservation, type ReservationStatus } from '../domain.js'
import { parseInt64 } from '../int64.js'
import { reservationJson } from '../reservations/reservation.json.js'
import { ReservationsService } from '../reservations/reservations.service.js'
import { type CliIo, escapeCell, parseCommand, parseSubcommand, say, table, UsageError, withStorage } from './io.js'

const USAGE = `holds: use holds list [--status S] [--limit N] [--json] | holds show ID | holds release ID (S one of ${RESERVATION_STATUSES.join(', ')})`

/** Each subcommand's options. */
const OPTIONS = {
  list: { status: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } },
  show: {},
  release: {},
} as const

/** The most holds `holds list` prints; the default is the API's page. */
const LIST_MAX = 1000
const LIST_DEFAULT = 100

/** Seconds until an active hold expires, as a table cell ("due" once past: the next sweep gives it back). */
function timeLeft(r: Reservation, now: number): string {
  if (r.status !== 'active') return '-'
  const ms = Date.parse(r.expiresAt) - now
  if (ms <= 0) return 'due'
  const s = Math.ceil(ms / 1000)
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`
}

/**
 * `petstore holds list [--status S] [--limit N] [--json] | show ID | release ID`: the holds, by id
 * (active ones with their time left), one hold as the API's JSON, or a hold released as
 * POST /v1/store/reservations/{id}/release does (its units back now, a ledger row a line).
 */
export async function holdsCommand(argv: string[], io: CliIo): Promise<void> {
  const { sub, args } = parseSubcommand('holds', argv, OPTIONS, USAGE)
  const command = `holds ${sub}`
  if (sub === 'list') {
    const { values } = parseCommand(command, args, OPTIONS.list, 0)
    const status = values.status
    if (status !== undefined && !(RESERVATION_STATUSES as readonly string[]).includes(status))
      throw new UsageError(`holds list: --status must be one of: ${RESERVATION_STATUSES.join(', ')}`)
    const limit = values.limit === undefined ? LIST_DEFAULT : Number(values.limit)
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX || !/^\d+$/.test(values.limit ?? '1'))
      throw new UsageError(`holds list: --limit must be an integer from 1 to ${LIST_MAX}`)
    const holds = await withStorage(io, (storage) =>
      new ReservationsService(storage).list({ after: 0n, limit, status: status as ReservationStatus | undefined }),
    )
    if (values.json) {
      io.stdout.write(`[${holds.map(reservationJson).join(',')}]\n`)
      return
    }
    const now = Date.now()
    io.stdout.write(
      table(
        ['ID', 'STATUS', 'EXPIRES AT', 'LEFT', 'LINES', 'REFERENCE'],
        holds.map((r) => [
          r.id,
          r.status,
          r.expiresAt,
          timeLeft(r, now),
          r.lines.map((l) => `${l.petId}x${l.quantity}`).join(' '),
          r.reference === null ? '-' : escapeCell(r.reference),
        ]),
      ),
    )
    return
  }
  const [target] = parseCommand(command, args, OPTIONS[sub], 1).positionals
  if (target === undefined) throw new UsageError(USAGE)
  const id = parseInt64(target)
  if (id === undefined) throw new UsageError(`${command}: ID must be a decimal int64`)
  await withStorage(io, async (storage) => {
    const service = new ReservationsService(storage)
    if (sub === 'show') {
      io.stdout.write(`${reservationJson(await service.get(id))}\n`)
      return
    }
    const released = await service.act(id, 'release', CLI_ACTOR)
    say(io, `Released hold ${id}: ${released.lines.map((l) => `${l.quantity} of pet ${l.petId}`).join(', ')} back in stock.`)
  })
}
