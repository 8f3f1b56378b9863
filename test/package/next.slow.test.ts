/**
 * The Next.js recipe builds: `next build` (Turbopack, Next's default) of a minimal App Router app
 * whose only route is examples/next-route.ts, with examples/next.config.mjs, against the packed
 * tarball (not the sources), offline. Next writes its own tsconfig.json and type-checks the route
 * with it.
 *
 * The app lives under .next-build/ in this repository (git-ignored): Turbopack compiles nothing
 * outside the folder of the nearest lockfile, and `next` is this repository's devDependency.
 * It checks dist/ as built (`npm ci` and `npm run build` build it).
 */
import { execFile } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '../..')
const run = promisify(execFile)
const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

/** An app folder under .next-build/ holding the unpacked tarball as node_modules/tokenvault. */
async function appWithPackedVault(): Promise<string> {
  const packs = await mkdtemp(join(tmpdir(), 'tokenvault-next-pack-'))
  dirs.push(packs)
  await mkdir(join(root, '.next-build'), { recursive: true })
  const app = await mkdtemp(join(root, '.next-build', 'app-'))
  dirs.push(app)
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packs], {
    cwd: root,
  })
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }]
  await mkdir(join(app, 'node_modules/tokenvault'), { recursive: true })
  await run('tar', [
    '-xzf',
    join(packs, filename),
    '-C',
    join(app, 'node_modules/tokenvault'),
    '--strip-components=1',
  ])
  return app
}

it('next build of the recipe succeeds with the packed package', async () => {
  const app = await appWithPackedVault()
  const route = join(app, 'app/api/vault/[...path]')
  await mkdir(route, { recursive: true })
  await copyFile(join(root, 'examples/next-route.ts'), join(route, 'route.ts'))
  await copyFile(join(root, 'examples/next.config.mjs'), join(app, 'next.config.mjs'))
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'next-recipe', private: true }))
  // An empty tsconfig.json: Next fills in its own (and reads nothing of this repository's paths).
  await writeFile(join(app, 'tsconfig.json'), '{}\n')
  const next = join(root, 'node_modules/next/dist/bin/next')
  const result = await run(process.execPath, [next, 'build'], {
    cwd: app,
    timeout: 280_000,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', NODE_OPTIONS: '', FORCE_COLOR: '0', CI: '1' },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, out: `${stdout}${stderr}` }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof error.code === 'number' ? error.code : 1,
      out: `${error.stdout ?? ''}${error.stderr ?? ''}`,
    }),
  )
  expect(result.code, result.out).toBe(0)
  expect(result.out).toMatch(/\/api\/vault\/\[\.\.\.path\]/)
  // Next type-checked the route with the tsconfig it wrote.
  expect(result.out).toMatch(/Finished TypeScript/)
  expect(JSON.parse(await readFile(join(app, 'tsconfig.json'), 'utf8')).compilerOptions).toBeDefined()
}, 300_000)
