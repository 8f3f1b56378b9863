/**
 * The packed tarball, as a new project installs it: `npm pack` once, unpacked into an empty project
 * whose node_modules holds only tokenvault's own dependencies (no fast-check, no pg), then publint,
 * `import` and `require` from Node, a vitest test and a Jest test in its default CommonJS mode.
 * It checks dist/ as built (`npm ci` and `npm run build` build it).
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ConsumerProject, consumerProject, ROOT as root } from '../support/consumer.js'

let consumer: ConsumerProject
let project = ''
const node = (args: string[], timeoutMs?: number) => consumer.node(args, timeoutMs)

beforeAll(async () => {
  // The package's dependencies, and the two test runners the consumer tests use; nothing else.
  consumer = await consumerProject('tarball', ['vitest', 'jest'])
  project = consumer.dir
}, 120_000)

afterAll(async () => {
  await consumer?.remove()
})

describe('the packed tarball in an empty project', () => {
  it('passes publint', async () => {
    const publint = join(root, 'node_modules/publint/src/cli.js')
    const result = await node([publint, join(project, 'node_modules/tokenvault'), '--strict'])
    expect(result.out).not.toMatch(/warning|error|suggestion/i)
    expect(result.code, result.out).toBe(0)
  })

  it('loads every entry point with import and with require, fast-check not installed', async () => {
    const code = `
      const vault = await import('tokenvault/testing').then((m) => m.createTestVault())
      const token = await vault.client().tokens.create({ type: 'token', data: 'x' })
      const cjs = require('tokenvault/testing')
      const other = await cjs.createTestVault()
      const again = await other.client().tokens.create({ type: 'token', data: 'y' })
      const entries = ['tokenvault', 'tokenvault/testing/vault'].concat(
        ['memory', 'file', 'postgres', 'http', 'sandbox'].map((a) => 'tokenvault/adapters/' + a),
      )
      for (const e of entries) {
        require(e); await import(e)
      }
      const missing = await import('tokenvault/testing/equivalence').then(() => 'loaded', (e) => e.code)
      console.log(JSON.stringify({ esm: typeof token.id, cjs: typeof again.id, missing }))
      await vault.close(); await other.close()
    `
    await writeFile(join(project, 'load.cjs'), `(async () => {${code}})()`)
    const result = await node(['load.cjs'])
    expect(result.code, result.out).toBe(0)
    expect(JSON.parse(result.out.trim().split('\n').at(-1)!)).toEqual({
      esm: 'string',
      cjs: 'string',
      missing: 'ERR_MODULE_NOT_FOUND',
    })
  })

  it("README's vitest example (examples/testing.test.ts) runs its tests", async () => {
    const example = await readFile(join(root, 'examples/testing.test.ts'), 'utf8')
    await writeFile(join(project, 'vault.test.ts'), example)
    const result = await consumer.vitest(['vault.test.ts'], 90_000)
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests\s+\d+ passed/)
  })

  it("Jest in its default CommonJS mode loads the test kit with require (docs/testing.md's example too)", async () => {
    await writeFile(
      join(project, 'vault.test.js'),
      `const { createTestVault } = require('tokenvault/testing')
let vault
beforeAll(async () => { vault = await createTestVault() })
afterAll(() => vault.close())
test('a token over HTTP, a listening vault', async () => {
  const created = await vault.client().tokens.create({ id: 'j1', type: 'token', data: 'jest' })
  expect(created.id).toBe('j1')
  const { url, close } = await vault.listen()
  const answer = await fetch(url + '/tokens/j1', { headers: { 'BT-API-KEY': vault.keys.private } })
  expect((await answer.json()).data).toBe('jest')
  await close()
})
`,
    )
    // The Jest example of docs/testing.md, as written.
    const readme = await readFile(join(root, 'docs/testing.md'), 'utf8')
    const example = /```js\n(const \{ createTestVault \} = require\('tokenvault\/testing'\)[\s\S]*?)```/.exec(
      readme,
    )?.[1]
    expect(example).toBeDefined()
    await writeFile(join(project, 'readme.test.js'), example!)
    const result = await consumer.jest(['vault.test.js', 'readme.test.js'], 90_000)
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests:\s+3 passed/)
  })
})
