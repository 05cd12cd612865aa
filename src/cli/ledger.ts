import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { finished } from 'node:stream/promises'
import { parseRfc3339 } from '../config.js'
import { InvalidInputError } from '../errors.js'
import type { LedgerJump } from '../domain.js'
import { changeJson } from '../inventory/inventory.json.js'
import { parseInt64 } from '../int64.js'
import { type CliIo, parseCommand, parseSubcommand, say, UsageError, withStorage } from './io.js'

const USAGE =
  'ledger: use ledger export --before DATE FILE, DATE an RFC 3339 date-time, FILE a file that does not exist yet; ' +
  'or ledger bump-seq N, N a whole number from 1'
/** Each subcommand's options. */
const OPTIONS = { export: { before: { type: 'string' } }, 'bump-seq': {} } as const
/** Rows read per step: bounded memory whatever the ledger's size. */
const PAGE_ROWS = 1000

/**
 * `petstore ledger export --before DATE FILE`: the ledger's rows from before DATE, as one JSON line
 * each (the feed's row), in seq order, into FILE, which must not exist yet. What it writes is what
 * retention removes with DATE as its cutoff: the oldest rows, up to the first one not before DATE.
 */
export async function ledgerCommand(argv: string[], io: CliIo): Promise<void> {
  const { sub, args } = parseSubcommand('ledger', argv, OPTIONS, USAGE)
  if (sub === 'bump-seq') {
    const [n] = parseCommand('ledger bump-seq', args, OPTIONS['bump-seq'], 1).positionals
    const by = n === undefined ? undefined : parseInt64(n)
    if (by === undefined || by < 1n) throw new UsageError(USAGE)
    const jump = await withStorage(io, (storage) => storage.bumpSeq(by))
    say(io, bumpedLine(jump))
    return
  }
  const { values, positionals } = parseCommand('ledger export', args, OPTIONS.export, 1)
  const [file] = positionals
  const before = values.before === undefined ? undefined : parseRfc3339(values.before)
  if (file === undefined || before === undefined) throw new UsageError(USAGE)
  const cutoff = before.toISOString()
  const { rows, first, last } = await withStorage(io, async (storage) => {
    // 'wx': an existing file is refused, never overwritten (an earlier archive stays whole).
    const out = createWriteStream(file, { flags: 'wx' })
    try {
      await once(out, 'open')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST')
        throw new InvalidInputError(`${file} exists already: the export writes a new file`)
      throw error
    }
    let written = 0
    let firstSeq: bigint | undefined
    let lastSeq: bigint | undefined
    try {
      let after = await storage.prunedThrough()
      for (;;) {
        const page = await storage.listChanges({ after, limit: PAGE_ROWS })
        const stop = page.findIndex((row) => row.at >= cutoff)
        const taken = stop === -1 ? page : page.slice(0, stop)
        if (taken.length > 0) {
          firstSeq ??= taken[0]!.seq
          lastSeq = taken.at(-1)!.seq
          written += taken.length
          if (!out.write(`${taken.map(changeJson).join('\n')}\n`)) await once(out, 'drain')
        }
        if (stop !== -1 || page.length < PAGE_ROWS) break
        after = page.at(-1)!.seq
      }
    } catch (error) {
      // No half archive left behind to be taken for a whole one.
      out.destroy()
      await rm(file, { force: true })
      throw error
    }
    out.end()
    await finished(out)
    return { rows: written, first: firstSeq, last: lastSeq }
  })
  say(io, `Exported ${rows} ledger rows from before ${cutoff} to ${file}${first === undefined ? '' : ` (seqs ${first} to ${last})`}.`)
}

/** What a bump (or a restore's) did, for people: where the seqs jump, and which cursors now get 410. */
export const bumpedLine = (jump: LedgerJump) =>
  `The ledger's next seq is ${jump.through + 1n} or later (its last row is ${jump.after}); ` +
  `a cursor from ${jump.after + 1n} to ${jump.through} now gets 410 cursor_expired.`
