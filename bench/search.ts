/**
 * Token search over the memory store: `node --import tsx bench/search.ts [tokens]` (default
 * 20000) creates that many tokens (with a search index and metadata each), then times one
 * `POST /tokens/search` (page of 10) and one `/v2/tokens/search` first page per query.
 */
import { memoryStore } from '../adapters/memory/index.js'
import { createService, manualClock } from '../entry/index.js'

const count = Number(process.argv[2] ?? 20_000)
const service = createService({ store: memoryStore(), clock: manualClock(), runner: null })
const tenant = await service.admin.createTenant({ name: 'bench' })
const { key } = await service.admin.createApplication({
  tenantId: tenant.id,
  name: 'search',
  type: 'private',
  permissions: ['token:create', 'token:read', 'token:search'],
})
const client = service.connect(key)
let started = performance.now()
for (let i = 0; i < count; i += 100) {
  await client.tokens.tokenize(
    Array.from({ length: Math.min(100, count - i) }, (_, j) => ({
      type: (i + j) % 10 ? 'token' : 'social_security_number_like',
      data: { n: String(i + j) },
      metadata: { n: String(i + j) },
      search_indexes: ['{{ data.n }}'],
    })),
  )
}
console.log(`created ${count} tokens in ${(performance.now() - started).toFixed(0)} ms`)
const queries = ['data:12345', 'metadata.n:777', 'type:social_security_number_like AND metadata.n:1*', '']
for (const query of queries) {
  started = performance.now()
  const v1 = await client.tokens.search({ query, size: 10 })
  const v1Ms = performance.now() - started
  started = performance.now()
  await client.tokens.searchV2({ query, size: 10 })
  const v2Ms = performance.now() - started
  console.log(
    `${JSON.stringify(query)}: ${v1.pagination.total_items} matches; v1 ${v1Ms.toFixed(0)} ms, v2 first page ${v2Ms.toFixed(0)} ms`,
  )
}
await service.close()
