import { inSpan, tracing } from '../spans.js'
import type { ResultOf, StockResult, StockWrite } from '../stock/writes.js'
import type { GroupCommit } from './group-commit.js'
import type { StockWrites } from './ports.js'

/** The StockWrites port of a backend's group commit, and its drain (for close). */
export function stockWritesThrough(groupCommit: GroupCommit<StockWrite, StockResult>): StockWrites & { drain(): Promise<void> } {
  return {
    writeStock<W extends StockWrite>(write: W): Promise<ResultOf<W>> {
      // planBatch answers every write with the result of its own kind. Traced: a span around its wait
      // and its batch's commit (the group commit's own spans, under it); untraced, nothing more.
      if (!tracing()) return groupCommit.submit(write) as Promise<ResultOf<W>>
      const kind = { attributes: { 'petstore.stock_write.kind': write.kind } }
      return inSpan('stock write', kind, () => groupCommit.submit(write)) as Promise<ResultOf<W>>
    },
    drain: () => groupCommit.drain(),
  }
}
