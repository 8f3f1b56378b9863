/**
 * Test insight from the packed tarball, as a consumer project uses it (see
 * test/package/consumer.slow.test.ts for the packing): leak checks with a canary, the matchers,
 * exposure, used access and fork, from a vitest test (ESM) and from Jest in its default CommonJS
 * mode, with no optional peer installed. It checks dist/ as built (`npm run build` builds it).
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '../..')
const run = promisify(execFile)
let project = ''

async function node(args: string[], timeout = 60_000) {
  return run(process.execPath, args, {
    cwd: project,
    timeout,
    env: { ...process.env, NODE_OPTIONS: '', FORCE_COLOR: '0', NO_COLOR: '1' },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, out: `${stdout}${stderr}` }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof error.code === 'number' ? error.code : 1,
      out: `${error.stdout ?? ''}${error.stderr ?? ''}`,
    }),
  )
}

beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), 'tokenvault-insight-'))
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', project], {
    cwd: root,
  })
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }]
  const modules = join(project, 'node_modules')
  await mkdir(join(modules, 'tokenvault'), { recursive: true })
  await run('tar', [
    '-xzf',
    join(project, filename),
    '-C',
    join(modules, 'tokenvault'),
    '--strip-components=1',
  ])
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>
  }
  for (const name of [...Object.keys(pkg.dependencies), 'vitest', 'jest']) {
    await mkdir(join(modules, name, '..'), { recursive: true })
    await symlink(join(root, 'node_modules', name), join(modules, name), 'dir')
  }
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }))
}, 120_000)

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true })
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
    const vitest = join(root, 'node_modules/vitest/vitest.mjs')
    const result = await node([vitest, 'run', '--root', project, 'insight.test.ts'], 90_000)
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests\s+1 passed/)
  })

  it('Jest in its default CommonJS mode does the same with require', async () => {
    await writeFile(
      join(project, 'insight.test.js'),
      checkout("const { createTestVault, vaultMatchers } = require('tokenvault/testing')"),
    )
    const jest = join(root, 'node_modules/jest/bin/jest.js')
    const result = await node([jest, '--rootDir', project, '--ci', 'insight.test.js'], 90_000)
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests:\s+1 passed/)
  })
})
