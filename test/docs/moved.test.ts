import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
// @ts-expect-error: a plain JavaScript script, checked by running it
import { parsePage } from '../../scripts/check-docs.mjs'

/**
 * Where each section of the README of before the guide (1 800 lines, up to commit 4edee4f) went:
 * its heading → the page and heading that hold its facts now. A reviewer reads an old section's
 * facts there; the test keeps each of these places in existence.
 */
const MOVED: [old: string, now: string][] = [
  ['# tokenvault (the introduction)', 'README.md#tokenvault'],
  ['## Run it', 'docs/getting-started.md#run-it'],
  ['## Run it (Stopping)', 'docs/server.md#shutdown'],
  ['## Run it (Logs)', 'docs/server.md#logs'],
  ['## Embed it', 'docs/getting-started.md#embed-it'],
  ['## Embed it (The pieces, service.admin)', 'docs/getting-started.md#the-pieces'],
  ['## Frameworks', 'docs/http-api.md#frameworks'],
  ['## HTTP API (the route table)', 'docs/http-api.md#routes'],
  ['## HTTP API (401, prefixes, CORS, 503)', 'docs/http-api.md#keys-prefixes-and-cors'],
  ['## HTTP API (Idempotency)', 'docs/http-api.md#idempotency'],
  ['## HTTP API (lists and errors)', 'docs/http-api.md#lists-and-errors'],
  ['### Token search', 'docs/search.md#token-search'],
  ["## Today's Basis Theory SDKs", 'docs/http-api.md#todays-basis-theory-sdks'],
  ['## Token types', 'docs/token-types.md#token-types'],
  ['## Token types (ids)', 'docs/token-types.md#token-ids'],
  ['## Token types (Expressions)', 'docs/token-types.md#expressions'],
  ['## Token types (Fingerprints)', 'docs/token-types.md#fingerprints-and-deduplication'],
  ['## The rules, briefly (Applications)', 'docs/token-types.md#applications'],
  ['## The rules, briefly (Containers, Access rules)', 'docs/token-types.md#containers-and-access-rules'],
  ['## The rules, briefly (No write shows more)', 'docs/token-types.md#no-write-shows-more'],
  ['## The rules, briefly (Transactions)', 'docs/transactions.md#transactions'],
  ['## The rules, briefly (Sessions)', 'docs/token-types.md#sessions'],
  ['## The rules, briefly (Reactors)', 'docs/reactors.md#reactors'],
  ['## The rules, briefly (Application keys)', 'docs/token-types.md#application-keys'],
  ['## The rules, briefly (Reactor formulas)', 'docs/reactors.md#reactor-formulas'],
  ['## The rules, briefly (Detokenization)', 'docs/reactors.md#detokenizing-arguments'],
  ['## The rules, briefly (Asynchronous react)', 'docs/reactors.md#asynchronous-react'],
  ['## Security model', 'docs/security.md#security-model'],
  ['## The formula sandbox', 'docs/reactors.md#the-formula-sandbox'],
  ['## The formula sandbox (What a formula can use)', 'docs/reactors.md#what-a-formula-can-use'],
  ['## The formula sandbox (Network)', 'docs/reactors.md#network'],
  ["## The formula sandbox (It can't use, What it does not promise)", 'docs/reactors.md#what-it-cant-use'],
  ['## Data at rest and the lifecycle', 'docs/security.md#data-at-rest'],
  ['## Data at rest and the lifecycle (The vault forgets)', 'docs/security.md#the-vault-forgets'],
  ['## Stores', 'docs/stores.md#the-stores'],
  ['## Stores (the store stores, the core decides)', 'docs/stores.md#the-store-stores-the-core-decides'],
  ['## Write your own store', 'docs/stores.md#write-your-own-store'],
  ['## How the code is laid out', 'docs/contributing.md#how-the-code-is-laid-out'],
  ['## How the code is laid out (Where a change goes)', 'docs/contributing.md#where-a-change-goes'],
  ['## Configuration', 'docs/server.md#configuration'],
  ['### Limits', 'docs/limits.md#per-request-limits'],
  ['### Bounds per tenant', 'docs/limits.md#bounds-per-tenant'],
  ['### Bounds per tenant (turns, admission)', 'docs/limits.md#fair-turns-and-admission'],
  ['### Bounds per tenant (PostgreSQL server)', 'docs/server.md#running-against-postgresql'],
  ['## Tests', 'docs/contributing.md#tests'],
  ['### Mutation testing', 'docs/contributing.md#mutation-testing'],
  ['## Testing with tokenvault', 'docs/testing.md#testing-with-tokenvault'],
  ['### The test console', 'docs/testing.md#the-test-console'],
  ['## Not built (webhooks, detokenize filters, idempotency, NUL)', 'docs/http-api.md#what-does-not-hold'],
  ['## Not built (search)', 'docs/search.md#what-does-not-hold'],
  ['## Not built (deduplication in a transaction)', 'docs/transactions.md#what-does-not-hold'],
  ['## Not built (asynchronous reacts, formula modules)', 'docs/reactors.md#what-does-not-hold'],
  ['## Not built (No write shows more, token type settings)', 'docs/token-types.md#what-does-not-hold'],
  ['## Not built (file store lists)', 'docs/stores.md#what-does-not-hold'],
  ['## Not built (the lockfile)', 'docs/contributing.md#dependencies'],
  ['## Dependencies', 'docs/contributing.md#dependencies'],
  ['## Performance', 'docs/performance.md#figures'],
  ['## Performance (every run, tried and dropped)', 'bench/NOTES.md#performance-lab-notes'],
  ['### What does not hold, and why', 'docs/performance.md#what-does-not-hold'],
  ['### What does not hold, and why (the analysis)', 'bench/NOTES.md#what-does-not-hold-and-why'],
]

describe('each section of the README before the guide has a place', () => {
  it.each(MOVED)('%s → %s', (_old, now) => {
    const [page, anchor] = now.split('#') as [string, string]
    const { headings } = parsePage(readFileSync(page, 'utf8'))
    expect(headings.map((h: { slug: string }) => h.slug)).toContain(anchor)
  })
})
