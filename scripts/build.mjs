// `npm run build`: dist/ made anew from the sources, nothing left of an earlier build (a module
// whose source is gone would otherwise ship in the package). In order: the ESM build and the
// declarations (tsc), the test console's files, the formula engine's prelude and run driver
// bundles, then scripts/build-cjs.mjs (date-fns bundled, the CommonJS build).
import { execFileSync } from 'node:child_process'
import { cpSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
process.chdir(root)
rmSync('dist', { recursive: true, force: true })
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
try {
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' })
} catch {
  process.exit(1)
}
cpSync('adapters/http/console', 'dist/adapters/http/console', { recursive: true })
const prelude = await import(join(root, 'dist/adapters/sandbox/prelude-source.js'))
await prelude.writePreludeBundle(
  'adapters/sandbox/prelude/index.js',
  'dist/adapters/sandbox/prelude.bundle.js',
)
await prelude.writePreludeBundle(
  'adapters/sandbox/prelude/driver.js',
  'dist/adapters/sandbox/driver.bundle.js',
)
await import('./build-cjs.mjs')
