import { type DueHold, INVARIANTS, type Violation } from '../storage/invariants.js'
import { type CliIo, escapeCell, parseCommand, say, withStorage } from './io.js'

/** A violation as one line on stdout: invariant, ids (name=value), finding, tab-separated. */
const violationLine = (v: Violation) =>
  `${v.invariant}\t${Object.entries(v.ids)
    .map(([name, value]) => `${name}=${escapeCell(String(value))}`)
    .join(' ')}\t${escapeCell(v.found)}\n`

/** A hold past its expiry that still holds its units: a line of its own, not a violation (every instance may be down). */
const dueLine = (d: DueHold) =>
  `hold_due\treservation=${d.reservationId} expires_at=${d.expiresAt}\t${d.units} units on ${d.lines} lines still held; the next instance to run gives them back\n`

/** Exit 1 after the list: some invariant does not hold. */
export class ViolationsFound extends Error {}

/**
 * `petstore check`: verifies the invariants the service promises (src/storage/invariants.ts) on
 * either backend, in one snapshot, while servers serve. Prints each violation on stdout as it is
 * found; exit 0 when all hold, 1 otherwise.
 */
export async function checkCommand(args: string[], io: CliIo): Promise<void> {
  parseCommand('check', args, {}, 0)
  const started = performance.now()
  const found = new Map<string, number>()
  let due = 0
  const counts = await withStorage(io, (storage) =>
    storage.checkInvariants(
      (violation) => {
        found.set(violation.invariant, (found.get(violation.invariant) ?? 0) + 1)
        io.stdout.write(violationLine(violation))
      },
      (hold) => {
        due++
        io.stdout.write(dueLine(hold))
      },
    ),
  )
  const read =
    `${counts.entries} entries, ${counts.ledgerRows} ledger rows, ${counts.orders} orders, ${counts.reservations} holds` +
    `${due === 0 ? '' : ` (${due} due)`}, ` +
    `${counts.webhooks} webhook subscriptions and ${counts.keys} API keys in ${((performance.now() - started) / 1000).toFixed(1)} s`
  if (found.size === 0) {
    say(io, `Checked ${read}: every invariant holds.`)
    return
  }
  const lines = Object.entries(INVARIANTS)
    .filter(([invariant]) => found.has(invariant))
    .map(([invariant, promise]) => `  ${invariant}: ${found.get(invariant)} (${promise})`)
  throw new ViolationsFound(`Checked ${read}: violations found:\n${lines.join('\n')}`)
}
