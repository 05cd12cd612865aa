// A pet's quantity over time, drawn by hand as an inline SVG (no chart library): a step line through
// one point per ledger row, sized by its viewBox so it scales with the page. Colours and widths come
// from styles.css classes (the CSP forbids style attributes); geometry is SVG attributes.
import type { InventoryChange } from 'petstore-client'

const WIDTH = 480
const HEIGHT = 200
const LEFT = 70
const RIGHT = 12
const TOP = 14
const BOTTOM = 34

/** Inside the axes, so no point sits on one. */
const INSET = 8

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'short' })
const withSeconds = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' })
/** The time axis's labels: to the second when the span is short enough for minutes to read alike. */
const timeLabel = (t: number, span: number) => (span < 3_600_000 ? withSeconds : dateTime).format(t)
const number = new Intl.NumberFormat(undefined)
/** Quantities up to 2147483647: exact while they fit the axis, compact beyond. */
const axisNumber = (n: number) => (n < 1e6 ? number.format(n) : new Intl.NumberFormat(undefined, { notation: 'compact' }).format(n))

/** Where each change is drawn: x by its time, y by the quantity it left. */
export function chartPoints(changes: InventoryChange[]) {
  const times = changes.map((c) => Date.parse(c.at))
  const quantities = changes.map((c) => c.quantity)
  const tMin = Math.min(...times)
  const tMax = Math.max(...times)
  const qMin = Math.min(...quantities)
  const qMax = Math.max(...quantities)
  const plotWidth = WIDTH - LEFT - RIGHT - 2 * INSET
  const plotHeight = HEIGHT - TOP - BOTTOM - 2 * INSET
  const x = (t: number) => LEFT + INSET + (tMax === tMin ? 0 : ((t - tMin) / (tMax - tMin)) * plotWidth)
  const y = (q: number) => TOP + INSET + (qMax === qMin ? plotHeight / 2 : (1 - (q - qMin) / (qMax - qMin)) * plotHeight)
  const round = (v: number) => Math.round(v * 100) / 100
  return {
    points: changes.map((c, i) => ({ change: c, x: round(x(times[i]!)), y: round(y(c.quantity)) })),
    tMin,
    tMax,
    qMin,
    qMax,
  }
}

/** The step line: from each point, level until the next change's time, then up or down to its quantity. */
export function stepPath(points: { x: number; y: number }[]): string {
  const [first, ...rest] = points
  if (!first) return ''
  let d = `M${first.x} ${first.y}`
  for (const p of rest) d += ` H${p.x} V${p.y}`
  // The last quantity holds until now: carry it to the right edge.
  return `${d} H${WIDTH - RIGHT}`
}

/** `changes` oldest first; at least one (the page says so in words when there are none). */
export function QuantityChart({ changes, petId }: { changes: InventoryChange[]; petId: bigint }) {
  const { points, tMin, tMax, qMin, qMax } = chartPoints(changes)
  const last = changes.at(-1)!
  const span = tMax - tMin
  const summary =
    `Quantity of pet ${String(petId)} over its latest ${changes.length} ${changes.length === 1 ? 'change' : 'changes'}, ` +
    `from ${timeLabel(tMin, span)} to ${timeLabel(tMax, span)}: between ${number.format(qMin)} and ${number.format(qMax)}, ` +
    `now ${number.format(last.quantity)}.`
  const bottom = HEIGHT - BOTTOM
  return (
    <svg class="chart" role="img" aria-label="Quantity over time" viewBox={`0 0 ${WIDTH} ${HEIGHT}`} preserveAspectRatio="xMidYMid meet">
      <title>{summary}</title>
      <g class="axis">
        <line x1={LEFT} y1={TOP} x2={LEFT} y2={bottom} />
        <line x1={LEFT} y1={bottom} x2={WIDTH - RIGHT} y2={bottom} />
        <text class="max-quantity" x={LEFT - 6} y={TOP + INSET + 4} text-anchor="end">
          {axisNumber(qMax)}
        </text>
        {qMax !== qMin && (
          <text class="min-quantity" x={LEFT - 6} y={bottom - INSET + 4} text-anchor="end">
            {axisNumber(qMin)}
          </text>
        )}
        <text x={LEFT} y={HEIGHT - 12} text-anchor="start">
          {timeLabel(tMin, span)}
        </text>
        {tMax !== tMin && (
          <text x={WIDTH - RIGHT} y={HEIGHT - 12} text-anchor="end">
            {timeLabel(tMax, span)}
          </text>
        )}
      </g>
      <path class="line" d={stepPath(points)} fill="none" vector-effect="non-scaling-stroke" />
      <g class="points">
        {points.map((p) => (
          <circle key={String(p.change.seq)} cx={p.x} cy={p.y} r={3} data-quantity={p.change.quantity} />
        ))}
      </g>
    </svg>
  )
}
