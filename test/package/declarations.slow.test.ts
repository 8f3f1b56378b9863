/**
 * The published declarations type-check in a strict consumer that checks libraries too
 * (`skipLibCheck: false`): every entry point of `package.json`'s `exports`, imported from the built
 * `dist/` through the package name, as a project depending on tokenvault would.
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '../..')

it('every entry point type-checks with skipLibCheck: false (a strict consumer of dist/)', async () => {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    exports: Record<string, unknown>
  }
  const entries = Object.keys(pkg.exports)
    .filter((e) => e !== './package.json')
    .map((e) => (e === '.' ? 'tokenvault' : `tokenvault/${e.slice(2)}`))
  expect(entries).toContain('tokenvault/adapters/postgres')
  const dir = await mkdtemp(join(tmpdir(), 'tokenvault-consumer-'))
  try {
    await mkdir(join(dir, 'node_modules'))
    await symlink(root, join(dir, 'node_modules', 'tokenvault'), 'dir')
    const lines = entries.map(
      (e, i) => `import * as m${i} from '${e}'\nexport const k${i} = Object.keys(m${i})`,
    )
    lines.push(
      "import { createService, manualClock } from 'tokenvault'",
      "import { memoryStore } from 'tokenvault/adapters/memory'",
      'const service = createService({ store: memoryStore(), clock: manualClock() })',
      "export const app = service.admin.createApplication({ tenantId: 't', name: 'x', type: 'private', permissions: ['token:read'] })",
    )
    await writeFile(join(dir, 'consumer.ts'), `${lines.join('\n')}\n`)
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          skipLibCheck: false,
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          lib: ['ES2023'],
          noEmit: true,
          types: ['node'],
          typeRoots: [join(root, 'node_modules/@types')],
        },
        files: ['consumer.ts'],
      }),
    )
    const tsc = join(root, 'node_modules/typescript/bin/tsc')
    const run = await promisify(execFile)(process.execPath, [tsc, '-p', dir], { cwd: dir }).then(
      () => ({ code: 0, out: '' }),
      (error: { code?: number; stdout?: string }) => ({ code: error.code ?? 1, out: error.stdout ?? '' }),
    )
    expect(run.out).toBe('')
    expect(run.code).toBe(0)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}, 300_000)

it('the types of the subpaths resolve with moduleResolution "node" (node10: older Next and tsconfigs without exports)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tokenvault-node10-'))
  try {
    // The packed tarball: node10 ignores `exports`, and this repository's sources would answer instead.
    const { stdout } = await promisify(execFile)(
      'npm',
      ['pack', '--ignore-scripts', '--json', '--pack-destination', dir],
      { cwd: root },
    )
    const [{ filename }] = JSON.parse(stdout) as [{ filename: string }]
    const unpacked = join(dir, 'node_modules', 'tokenvault')
    await mkdir(unpacked, { recursive: true })
    await promisify(execFile)('tar', ['-xzf', join(dir, filename), '-C', unpacked, '--strip-components=1'])
    for (const name of ['valibot', 'nanoid', 'quickjs-emscripten-core', '@jitl/quickjs-ffi-types']) {
      await mkdir(join(dir, 'node_modules', name, '..'), { recursive: true })
      await symlink(join(root, 'node_modules', name), join(dir, 'node_modules', name), 'dir')
    }
    await writeFile(
      join(dir, 'consumer.ts'),
      [
        "import { createService, manualClock } from 'tokenvault'",
        "import { memoryStore } from 'tokenvault/adapters/memory'",
        "import { createHttpHandler } from 'tokenvault/adapters/http'",
        "import { createTestVault } from 'tokenvault/testing'",
        'const service = createService({ store: memoryStore(), clock: manualClock() })',
        'export const handler: (request: Request) => Promise<Response> = createHttpHandler(service)',
        'export const vault = createTestVault()',
      ].join('\n'),
    )
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          skipLibCheck: true,
          module: 'esnext',
          moduleResolution: 'node',
          target: 'ES2022',
          lib: ['ES2024', 'DOM', 'DOM.Iterable'],
          noEmit: true,
          types: ['node'],
          typeRoots: [join(root, 'node_modules/@types')],
        },
        files: ['consumer.ts'],
      }),
    )
    const tsc = join(root, 'node_modules/typescript/bin/tsc')
    const run = await promisify(execFile)(process.execPath, [tsc, '-p', dir], { cwd: dir }).then(
      () => ({ code: 0, out: '' }),
      (error: { code?: number; stdout?: string }) => ({ code: error.code ?? 1, out: error.stdout ?? '' }),
    )
    expect(run.out).toBe('')
    expect(run.code).toBe(0)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}, 300_000)
