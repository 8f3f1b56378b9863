import { quoteIdent } from './keys.js'

/** The schema-qualified table names of one store. */
export type Tables = ReturnType<typeof tables>

/** The qualified names of the store's tables in `schema`. */
export function tables(schema: string) {
  const s = quoteIdent(schema)
  return {
    schema: s,
    tenants: `${s}.tenants`,
    applications: `${s}.applications`,
    apiKeys: `${s}.api_keys`,
    tokens: `${s}.tokens`,
    tokenCounts: `${s}.token_counts`,
    associations: `${s}.associations`,
    transactions: `${s}.transactions`,
    stagedWrites: `${s}.staged_writes`,
    tokenLocks: `${s}.token_locks`,
    sessions: `${s}.sessions`,
    nonces: `${s}.session_nonces`,
    formulas: `${s}.formulas`,
    reactors: `${s}.reactors`,
    formulaUses: `${s}.formula_uses`,
    idempotency: `${s}.idempotency`,
  }
}
