// A section of bench/RESULTS.md between its own two marker comments, which a run of only that
// section's scenarios rewrites while leaving the rest of the file alone (the live and ledger-size groups).
import { readFile, writeFile } from 'node:fs/promises'

export interface SectionMarkers {
  start: string
  end: string
}

/** The section as it stands in the file (markers included), or undefined. */
export async function readSection(path: string, marks: SectionMarkers): Promise<string | undefined> {
  const text = await readFile(path, 'utf8').catch(() => '')
  const start = text.indexOf(marks.start)
  const end = text.indexOf(marks.end)
  return start !== -1 && end > start ? `${text.slice(start, end + marks.end.length)}\n` : undefined
}

/** Puts `section` into the file in place of the marked one, or after everything else. */
export async function writeSection(path: string, section: string, marks: SectionMarkers): Promise<void> {
  const text = await readFile(path, 'utf8').catch(() => '# Benchmark results\n\n')
  const start = text.indexOf(marks.start)
  const end = text.indexOf(marks.end)
  const next =
    start !== -1 && end > start
      ? text.slice(0, start) + section.trimEnd() + text.slice(end + marks.end.length)
      : `${text.trimEnd()}\n\n${section}`
  await writeFile(path, next.endsWith('\n') ? next : `${next}\n`)
}
