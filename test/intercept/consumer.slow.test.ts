/**
 * `tokenvault/intercept` from the packed tarball, as a new project installs it: `npm pack` once,
 * unpacked into an empty project whose node_modules holds tokenvault's own dependencies, the two
 * SDKs and the two test runners; then docs/intercept.md's vitest example (ESM) and its Jest
 * example (Jest's default CommonJS mode, `require`) run SDK calls with no base URL under the
 * interceptor. It checks dist/ as built (`npm ci` and `npm run build` build it).
 */
import { execFile } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '../..')
const examples = join(root, 'test/intercept/examples')
const run = promisify(execFile)
let project = ''

/** Runs `args` with node in the project, answering its exit code and output. */
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
  project = await mkdtemp(join(tmpdir(), 'tokenvault-intercept-'))
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
  const sdks = ['@basis-theory/node-sdk', '@basis-theory/basis-theory-js']
  for (const name of [...Object.keys(pkg.dependencies), ...sdks, 'vitest', 'jest']) {
    await mkdir(join(modules, name, '..'), { recursive: true })
    await symlink(join(root, 'node_modules', name), join(modules, name), 'dir')
  }
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }))
  await copyFile(join(examples, 'vitest.test.ts'), join(project, 'intercept.test.ts'))
  await copyFile(join(examples, 'jest.test.js'), join(project, 'intercept.test.js'))
}, 60_000)

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true })
})

describe('tokenvault/intercept from the packed tarball', () => {
  it('vitest: node-sdk 5 with no baseUrl stores a token in the in-process vault', async () => {
    const vitest = join(root, 'node_modules/vitest/vitest.mjs')
    const result = await node([vitest, 'run', '--root', project, 'intercept.test.ts'])
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests\s+1 passed/)
  })

  it('Jest in its default CommonJS mode: node-sdk 5 and basis-theory-js 1.79.3 with no base URL', async () => {
    const jest = join(root, 'node_modules/jest/bin/jest.js')
    const result = await node([jest, '--rootDir', project, '--ci', 'intercept.test.js'])
    expect(result.code, result.out).toBe(0)
    expect(result.out).toMatch(/Tests:\s+1 passed/)
  })
})
