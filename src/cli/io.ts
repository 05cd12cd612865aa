import { loadConfig } from '../config.js'
import { openStorage } from '../storage/open-storage.js'
import type { Storage } from '../storage/ports.js'

/**
 * What a command reads and writes besides the database: the process's environment and streams when
 * run as `petstore`, strings when a test runs it in-process.
 */
export interface CliIo {
  env: NodeJS.ProcessEnv
  stdout: { write(text: string): unknown }
  stderr: { write(text: string): unknown }
}

/** A command line that does not fit the command: exit 2 with the usage. */
export class UsageError extends Error {}

/** A line for people, on stderr: stdout carries only what a script reads (a token, a table, JSON). */
export const say = (io: CliIo, line: string) => io.stderr.write(`${line}\n`)

/** Rows as tab-separated lines under a header: what `cut` and `column -t` read. */
export const table = (header: string[], rows: unknown[][]) => `${[header, ...rows].map((row) => row.join('\t')).join('\n')}\n`

const CELL_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\r': '\\r', '\n': '\\n' }

/**
 * A client's text as one cell: a tab or a line break would split the row, so they are escaped, and
 * so is backslash, so the escapes stay unambiguous. Every other control character (C0, DEL, C1) is
 * written as \u{…}: a note must not move the operator's cursor or recolour their terminal.
 */
export function escapeCell(text: string): string {
  return text.replace(/[\\\t\r\n]|\p{Cc}/gu, (c) => CELL_ESCAPES[c] ?? `\\u{${c.codePointAt(0)!.toString(16)}}`)
}

/** Opens the storage named by the environment for one command, and closes it after. */
export async function withStorage<T>(io: CliIo, run: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await openStorage(loadConfig(io.env))
  try {
    return await run(storage)
  } finally {
    await storage.close()
  }
}
