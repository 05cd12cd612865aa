// Exact JSON: every int64 property (named by the OpenAPI document: INT64_PROPERTIES) is read from
// its source text as a bigint, and every bigint is written as its digits. Standard JSON.parse would
// round 9007199254740993 to 9007199254740992 before any code could see it; JSON.parse's source text
// access (a reviver's third argument) and JSON.rawJSON, in Node 22+ and current browsers, make this
// exact without a dependency.
import { INT64_PROPERTIES } from './generated/openapi.js'

type Reviver = (this: unknown, key: string, value: unknown, context?: { source?: string }) => unknown
interface SourceTextJson {
  parse(text: string, reviver: Reviver): unknown
  rawJSON?: (text: string) => unknown
}
const json = JSON as unknown as SourceTextJson

/** Whether this runtime gives a reviver the numbers' source text and has JSON.rawJSON. */
export function supportsExactJson(): boolean {
  try {
    return json.parse('1', (_key, _value, context) => context?.source) === '1' && typeof json.rawJSON === 'function'
  } catch {
    return false
  }
}

/** Parses a body of the API: int64 properties become bigints, exactly. */
export function parseExact<T = unknown>(text: string): T {
  return json.parse(text, (key, value, context) => {
    if (typeof value === 'number' && context?.source !== undefined && INT64_PROPERTIES.has(key)) return BigInt(context.source)
    return value
  }) as T
}

/** JSON text of a request body: bigints as their exact digits. */
export function stringifyExact(value: unknown): string {
  const raw = json.rawJSON as (text: string) => unknown
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? raw(v.toString()) : v))
}
