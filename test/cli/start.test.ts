/**
 * `npm start` (scripts/start.mjs) runs the built server without compiling first, and builds only
 * when dist/ is missing or older than a source. Checked in a scratch copy with a stand-in server
 * and build, so the test neither depends on nor disturbs this checkout's dist/.
 */
import { execFile } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterEach, expect, it } from 'vitest'
import { root } from './spawn.js'

const run = promisify(execFile)
const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

async function scratch() {
  const dir = await mkdtemp(join(tmpdir(), 'tokenvault-start-'))
  dirs.push(dir)
  await mkdir(join(dir, 'scripts'))
  await mkdir(join(dir, 'src'))
  await mkdir(join(dir, 'dist/bin'), { recursive: true })
  await copyFile(join(root, 'scripts/start.mjs'), join(dir, 'scripts/start.mjs'))
  await writeFile(join(dir, 'src/a.ts'), 'export const a = 1\n')
  const server = "console.log('server ' + process.argv.slice(2).join(' '))\n"
  await writeFile(join(dir, 'dist/bin/tokenvault.js'), server)
  // The stand-in build writes the stand-in server.
  await writeFile(
    join(dir, 'build.cjs'),
    `require('node:fs').writeFileSync('dist/bin/tokenvault.js', ${JSON.stringify(server)})\n`,
  )
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ type: 'module', scripts: { build: 'node build.cjs' } }),
  )
  const old = new Date(Date.now() - 60_000)
  await utimes(join(dir, 'src/a.ts'), old, old)
  return dir
}

const start = async (dir: string) => {
  const { stdout, stderr } = await run(process.execPath, ['scripts/start.mjs', 'serve', '--port', '0'], {
    cwd: dir,
  })
  return { stdout, stderr }
}

it('npm start runs dist/bin/tokenvault.js at once when dist/ is newer than every source', async () => {
  const dir = await scratch()
  const { stdout, stderr } = await start(dir)
  expect(stdout).toBe('server serve --port 0\n')
  expect(stderr).not.toContain('building')
})

it('npm start builds first when a source is newer than dist/, or dist/ is missing', async () => {
  const dir = await scratch()
  const later = new Date(Date.now() + 60_000)
  await utimes(join(dir, 'src/a.ts'), later, later)
  const stale = await start(dir)
  expect(stale.stderr).toContain('building first (a source file is newer than dist/)')
  expect(stale.stdout).toContain('server serve --port 0')
  await rm(join(dir, 'dist'), { recursive: true })
  await mkdir(join(dir, 'dist/bin'), { recursive: true })
  const missing = await start(dir).catch((error: { stderr: string }) => ({
    stdout: '',
    stderr: error.stderr,
  }))
  expect(missing.stderr).toContain('building first (dist/ is missing)')
})

it("package.json: start doesn't compile, npm ci builds through prepare", async () => {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>
  }
  expect(pkg.scripts['start']).toBe('node scripts/start.mjs serve')
  expect(pkg.scripts['prepare']).toBe('npm run build')
})
