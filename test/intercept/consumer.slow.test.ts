/**
 * `tokenvault/intercept` from the packed tarball, as a new project installs it: `npm pack` once,
 * unpacked into an empty project whose node_modules holds tokenvault's own dependencies, the two
 * SDKs and the two test runners; then docs/intercept.md's vitest example (ESM) and its Jest
 * example (Jest's default CommonJS mode, `require`) run SDK calls with no base URL under the
 * interceptor. It checks dist/ as built (`npm ci` and `npm run build` build it).
 */
import { copyFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ConsumerProject, consumerProject, ROOT } from '../support/consumer.js'

const examples = join(ROOT, 'test/intercept/examples')
let consumer: ConsumerProject

beforeAll(async () => {
  const sdks = ['@basis-theory/node-sdk', '@basis-theory/basis-theory-js']
  consumer = await consumerProject('intercept', [...sdks, 'vitest', 'jest'])
  await copyFile(join(examples, 'vitest.test.ts'), join(consumer.dir, 'intercept.test.ts'))
  await copyFile(join(examples, 'jest.test.js'), join(consumer.dir, 'intercept.test.js'))
}, 120_000)

afterAll(async () => {
  await consumer?.remove()
})

describe('tokenvault/intercept from the packed tarball', () => {
  it('vitest: node-sdk 5 with no baseUrl stores a token in the in-process vault', async () => {
    const result = await consumer.vitest(['intercept.test.ts'], 90_000)
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests\s+1 passed/)
  })

  it('Jest in its default CommonJS mode: node-sdk 5 and basis-theory-js 1.79.3 with no base URL', async () => {
    const result = await consumer.jest(['intercept.test.js'], 90_000)
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests:\s+1 passed/)
  })
})
