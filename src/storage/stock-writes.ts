import { failed, startChildSpan, tracing } from '../spans.js'
import type { ResultOf, StockResult, StockWrite } from '../stock/writes.js'
import type { GroupCommit } from './group-commit.js'
import type { StockWrites } from './ports.js'

/** The StockWrites port of a backend's group commit, and its drain (for close). */
export function stockWritesThrough(groupCommit: GroupCommit<StockWrite, StockResult>): StockWrites & { drain(): Promise<void> } {
  return {
    writeStock<W extends StockWrite>(write: W): Promise<ResultOf<W>> {
      // planBatch answers every write with the result of its own kind. Traced: a span around its wait
      // and its batch's commit, handed to the group commit (its batch's span goes under it), not
      // entered as the active context: nothing else runs under it; untraced, nothing more.
      if (!tracing()) return groupCommit.submit(write) as Promise<ResultOf<W>>
      const span = startChildSpan('stock write', { attributes: { 'petstore.stock_write.kind': write.kind } })
      if (span === undefined) return groupCommit.submit(write) as Promise<ResultOf<W>>
      return groupCommit.submit(write, span).then(
        (result) => {
          span.end()
          return result as ResultOf<W>
        },
        (error: unknown) => {
          failed(span, error)
          span.end()
          throw error
        },
      )
    },
    drain: () => groupCommit.drain(),
  }
}
