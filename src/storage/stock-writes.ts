import type { ResultOf, StockResult, StockWrite } from '../stock/writes.js'
import type { GroupCommit } from './group-commit.js'
import type { StockWrites } from './ports.js'

/** The StockWrites port of a backend's group commit, and its drain (for close). */
export function stockWritesThrough(groupCommit: GroupCommit<StockWrite, StockResult>): StockWrites & { drain(): Promise<void> } {
  return {
    writeStock<W extends StockWrite>(write: W): Promise<ResultOf<W>> {
      // planBatch answers every write with the result of its own kind.
      return groupCommit.submit(write) as Promise<ResultOf<W>>
    },
    drain: () => groupCommit.drain(),
  }
}
