// Small figures every bench file reads its rounds with: one place for them.

/** The median of a non-empty list (the mean of the two middle values of an even one). */
export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
