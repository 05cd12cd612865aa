import { isScope, SCOPES, type Scope } from '../domain.js'

/*
 * A key's scopes as both backends store them: one text column, space-separated, in the order of
 * SCOPES, so a listing always shows them alike. SQL-free.
 */

export const scopesColumn = (scopes: readonly Scope[]): string => SCOPES.filter((s) => scopes.includes(s)).join(' ')

export const scopesOf = (column: string): Scope[] => column.split(' ').filter(isScope)
