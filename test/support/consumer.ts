/**
 * A consumer project made from the packed tarball, as a new project installs tokenvault: `npm pack`,
 * unpacked into `node_modules/tokenvault` of an empty temp project whose node_modules holds only
 * tokenvault's own dependencies (symlinked from this checkout) and the `extra` packages a test needs
 * (test runners, SDKs) — no fast-check, no pg. It checks dist/ as built (`npm run build`). Used by
 * the `*consumer*.slow.test.ts` files of test/package, test/insight and test/intercept.
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'

/** The checkout's root directory. */
export const ROOT = resolve(import.meta.dirname, '../..')
const run = promisify(execFile)

/** What a program run in the project answered: its exit code and its stdout and stderr together. */
export interface Ran {
  code: number
  out: string
}

/** A consumer project on disk. */
export interface ConsumerProject {
  /** Its directory. */
  dir: string
  /** Runs `args` with node in the project (no colours, no inherited NODE_OPTIONS), killed after `timeoutMs`. */
  node(args: string[], timeoutMs?: number): Promise<Ran>
  /** Runs the checkout's vitest on `files` of the project. */
  vitest(files: string[], timeoutMs?: number): Promise<Ran>
  /** Runs the checkout's Jest (its default CommonJS mode) on `files` of the project. */
  jest(files: string[], timeoutMs?: number): Promise<Ran>
  /** Deletes the project. */
  remove(): Promise<void>
}

/**
 * Packs the checkout and makes a consumer project of it (see the module's comment), named
 * `tokenvault-<name>-…` in the temp directory, with `extra` packages linked beside the dependencies.
 */
export async function consumerProject(name: string, extra: readonly string[]): Promise<ConsumerProject> {
  const dir = await mkdtemp(join(tmpdir(), `tokenvault-${name}-`))
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
    cwd: ROOT,
  })
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }]
  const modules = join(dir, 'node_modules')
  await mkdir(join(modules, 'tokenvault'), { recursive: true })
  await run('tar', ['-xzf', join(dir, filename), '-C', join(modules, 'tokenvault'), '--strip-components=1'])
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>
  }
  for (const linked of [...Object.keys(pkg.dependencies), ...extra]) {
    await mkdir(join(modules, linked, '..'), { recursive: true })
    await symlink(join(ROOT, 'node_modules', linked), join(modules, linked), 'dir')
  }
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true }))
  const node = (args: string[], timeoutMs = 60_000): Promise<Ran> =>
    run(process.execPath, args, {
      cwd: dir,
      timeout: timeoutMs,
      env: { ...process.env, NODE_OPTIONS: '', FORCE_COLOR: '0', NO_COLOR: '1' },
    }).then(
      ({ stdout, stderr }) => ({ code: 0, out: `${stdout}${stderr}` }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({
        code: typeof error.code === 'number' ? error.code : 1,
        out: `${error.stdout ?? ''}${error.stderr ?? ''}`,
      }),
    )
  return {
    dir,
    node,
    vitest: (files, timeoutMs) =>
      node([join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--root', dir, ...files], timeoutMs),
    jest: (files, timeoutMs) =>
      node([join(ROOT, 'node_modules/jest/bin/jest.js'), '--rootDir', dir, '--ci', ...files], timeoutMs),
    remove: () => rm(dir, { recursive: true, force: true }),
  }
}
