import { type ParseArgsOptionsConfig, parseArgs } from 'node:util'
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
  /** What a command reads for `-` (`petstore batch -`): the process's stdin when absent. */
  stdin?: AsyncIterable<Buffer | string>
}

/** A command line that does not fit the command: exit 2 with the usage. */
export class UsageError extends Error {}

/*
 * The one wording of a refused command line: its first line names what was refused and the command
 * that refused it ('keys list' for `petstore keys list`, '' for `petstore` itself); the usage follows.
 */
const petstore = (command: string) => `'petstore${command ? ` ${command}` : ''}'`
export const unknownOption = (command: string, option: string) => new UsageError(`Unknown option '${option}' for ${petstore(command)}`)
export const unexpectedArgument = (command: string, argument: string) =>
  new UsageError(`Unexpected argument '${argument}' for ${petstore(command)}`)
export const unknownCommand = (command: string, name: string) => new UsageError(`Unknown command '${name}' for ${petstore(command)}`)

/**
 * A command's arguments, parsed strictly (node:util parseArgs): an option not in `options` and a
 * positional argument past the first `positionals` are refused, naming them. Too few positionals are
 * the command's to refuse: its usage says which it needs. The tokens say where each came from in `args`.
 */
export function parseCommand<const O extends ParseArgsOptionsConfig>(command: string, args: string[], options: O, positionals: number) {
  const config = { args, options, allowPositionals: true, strict: true, tokens: true } as const
  let parsed: ReturnType<typeof parseArgs<typeof config>>
  try {
    parsed = parseArgs(config)
  } catch (error) {
    // parseArgs names the option, but not the command, and with advice about positionals that misleads here.
    if ((error as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const unknown = unknownOptions(args, options)[0]
      if (unknown !== undefined) throw unknownOption(command, unknown)
    }
    throw error
  }
  const extra = parsed.positionals[positionals]
  if (extra !== undefined) throw unexpectedArgument(command, extra)
  return parsed
}

/**
 * parseCommand for a command whose positional arguments may be negative numbers (a PETID, a DELTA),
 * which parseArgs would read as short options: `-5` is a positional unless it is the value of a
 * string option before it. The positionals come back in their order on the command line, so the one
 * refused past the first `positionals` is the one the operator sees there.
 */
export function parseCommandWithNegatives<const O extends ParseArgsOptionsConfig>(
  command: string,
  args: string[],
  options: O,
  positionals: number,
) {
  const takesValue = new Set(
    Object.entries(options).flatMap(([name, option]) =>
      option.type === 'string' ? [`--${name}`, ...(option.short ? [`-${option.short}`] : [])] : [],
    ),
  )
  const negative = (a: string, i: number) => /^-\d+$/.test(a) && !takesValue.has(args[i - 1] ?? '')
  const kept = args.flatMap((a, i) => (negative(a, i) ? [] : [i]))
  const { values, tokens } = parseCommand(
    command,
    kept.map((i) => args[i]!),
    options,
    Number.POSITIVE_INFINITY,
  )
  const found = [
    ...args.flatMap((a, i) => (negative(a, i) ? [{ at: i, value: a }] : [])),
    ...tokens.flatMap((t) => (t.kind === 'positional' ? [{ at: kept[t.index]!, value: t.value }] : [])),
  ]
    .sort((a, b) => a.at - b.at)
    .map((p) => p.value)
  const extra = found[positionals]
  if (extra !== undefined) throw unexpectedArgument(command, extra)
  return { values, positionals: found }
}

/** The options in `args` that are not in `options`, as written ('--bogus', '-x'). */
function unknownOptions(args: string[], options: ParseArgsOptionsConfig): string[] {
  const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true })
  return tokens.flatMap((token) => (token.kind === 'option' && !Object.hasOwn(options, token.name) ? [token.rawName] : []))
}

/**
 * A command of subcommands (`petstore keys list`): its subcommand is the first positional argument,
 * wherever the options stand, and `args` without it are that subcommand's to parse (parseCommand).
 * A subcommand not in `subcommands` is refused naming it; none at all is refused with `usage`.
 */
export function parseSubcommand<S extends string>(
  command: string,
  args: string[],
  subcommands: Record<S, ParseArgsOptionsConfig>,
  usage: string,
): { sub: S; args: string[] } {
  const options: ParseArgsOptionsConfig = Object.assign({}, ...Object.values<ParseArgsOptionsConfig>(subcommands))
  const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true })
  const first = tokens.find((token) => token.kind === 'positional')
  if (first === undefined) {
    const unknown = unknownOptions(args, options)[0]
    throw unknown === undefined ? new UsageError(usage) : unknownOption(command, unknown)
  }
  if (!Object.hasOwn(subcommands, first.value)) throw unknownCommand(command, first.value)
  return { sub: first.value as S, args: args.filter((_, i) => i !== first.index) }
}

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
