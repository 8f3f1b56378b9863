/**
 * Test insight from the packed tarball, as a consumer project uses it (see
 * test/package/consumer.slow.test.ts for the packing): leak checks with a canary, the matchers,
 * exposure, used access and fork, from a vitest test (ESM) and from Jest in its default CommonJS
 * mode, with no optional peer installed. It checks dist/ as built (`npm run build` builds it).
 */
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ConsumerProject, consumerProject } from '../support/consumer.js'

let consumer: ConsumerProject
let project = ''

beforeAll(async () => {
  consumer = await consumerProject('insight', ['vitest', 'jest'])
  project = consumer.dir
}, 120_000)

afterAll(async () => {
  await consumer?.remove()
})

/** The same checkout test for both runners: `header` brings the kit in, `expect` is the runner's. */
const checkout = (header: string) => `${header}
expect.extend(vaultMatchers)
let vault
beforeAll(async () => { vault = await createTestVault() })
afterAll(() => vault.close())
test('a checkout that logs a masked card passes its leak check and stays in its exposure budget', async () => {
  const canary = await vault.leaks.canary('card')
  const client = vault.client()
  const read = await client.tokens.get(canary.id)
  const logs = ['charging card ending ' + read.data.number.slice(-4)]
  expect(logs).not.toContainVaultPlaintext(vault)
  expect(() => vault.leaks.check(['pan=' + canary.value])).toThrow(/canary/)
  expect(vault).toExposeAtMost({ 'private application': 1 })
  expect(vault.usedAccess().fixture()[0].rules[0].container).toBe('/pci/high/')
  const fork = vault.fork()
  await fork.client().tokens.delete(canary.id)
  expect((await client.tokens.get(canary.id)).id).toBe(canary.id)
  await fork.close()
})
`

describe('test insight from the packed tarball', () => {
  it('a vitest test (ESM) uses leaks, the matchers, exposure, used access and fork', async () => {
    await writeFile(
      join(project, 'insight.test.ts'),
      checkout(
        "import { afterAll, beforeAll, expect, test } from 'vitest'\nimport { createTestVault, vaultMatchers } from 'tokenvault/testing'",
      ),
    )
    const result = await consumer.vitest(['insight.test.ts'], 90_000)
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests\s+1 passed/)
  })

  it('Jest in its default CommonJS mode does the same with require', async () => {
    await writeFile(
      join(project, 'insight.test.js'),
      checkout("const { createTestVault, vaultMatchers } = require('tokenvault/testing')"),
    )
    const result = await consumer.jest(['insight.test.js'], 90_000)
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests:\s+1 passed/)
  })
})
