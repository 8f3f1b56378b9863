/**
 * The packed tarball, as a new project installs it: `npm pack` once, unpacked into an empty project
 * whose node_modules holds only tokenvault's own dependencies (no fast-check, no pg), then publint,
 * `import` and `require` from Node, a vitest test and a Jest test in its default CommonJS mode.
 * It checks dist/ as built (`npm ci` and `npm run build` build it).
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

/** Runs `args` with node in the project, answering its exit code and output. */
async function node(args: string[], timeout = 30_000) {
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
  project = await mkdtemp(join(tmpdir(), 'tokenvault-tarball-'))
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
  // The package's dependencies, and the two test runners the consumer tests use; nothing else.
  for (const name of [...Object.keys(pkg.dependencies), 'vitest', 'jest']) {
    await mkdir(join(modules, name, '..'), { recursive: true })
    await symlink(join(root, 'node_modules', name), join(modules, name), 'dir')
  }
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }))
}, 60_000)

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true })
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
    const vitest = join(root, 'node_modules/vitest/vitest.mjs')
    const result = await node([vitest, 'run', '--root', project, 'vault.test.ts'], 60_000)
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
    const jest = join(root, 'node_modules/jest/bin/jest.js')
    const result = await node([jest, '--rootDir', project, '--ci', 'vault.test.js', 'readme.test.js'], 60_000)
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests:\s+3 passed/)
  })
})
