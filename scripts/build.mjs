// `npm run build`: dist/ made anew from the sources, nothing left of an earlier build (a module
// whose source is gone would otherwise ship in the package). In order: the ESM build and the
// declarations (tsc), the test console's files, the formula engine's prelude and run driver
// bundles, then scripts/build-cjs.mjs (date-fns bundled, the CommonJS build), and last the ESM
// modules' comments taken out (the declarations keep theirs, for editors).
import { execFileSync } from 'node:child_process'
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
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

/**
 * The ESM modules tsc wrote, each through esbuild's transform (the same code, ESM in and out, at the
 * build's target): comments go (the CommonJS build, made by esbuild too, has none), which takes about
 * a quarter off the package. Not the console's files (served as written), the bundles or dist/cjs.
 */
const { transformSync } = await import('esbuild')
const KEEP = ['dist/cjs', 'dist/vendor', 'dist/adapters/http/console']
function* esmModules(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (!KEEP.includes(path)) yield* esmModules(path)
    } else if (entry.name.endsWith('.js') && !entry.name.endsWith('.bundle.js')) yield path
  }
}
for (const file of esmModules('dist')) {
  const code = readFileSync(file, 'utf8')
  writeFileSync(file, transformSync(code, { format: 'esm', loader: 'js', target: 'es2022' }).code)
}
