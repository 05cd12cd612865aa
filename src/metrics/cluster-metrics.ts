import { AggregatorRegistry } from 'prom-client'
import type { Scrape } from './metrics.js'

/**
 * With `--workers N`, one scrape of the primary returns every worker's figures: prom-client's
 * AggregatorRegistry asks each worker over the cluster IPC channel for its global registry (as JSON)
 * and merges them (counters and histograms summed, gauges summed unless a metric says otherwise).
 * Its messages carry their own type, so they never meet the primary's shutdown message. A worker that
 * does not answer within 5 s (it is starting, or dying) fails that scrape.
 */
export function clusterScrape(): Scrape {
  const aggregator = new AggregatorRegistry()
  return { contentType: aggregator.contentType, collect: () => aggregator.clusterMetrics() }
}

/**
 * In a worker: answer the primary's requests for this process's metrics. Constructing an
 * AggregatorRegistry is what installs prom-client's listener; the registry itself is not used.
 */
export function answerClusterScrapes(): void {
  new AggregatorRegistry()
}
