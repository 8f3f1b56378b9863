// Finishes the build after `tsc -p tsconfig.build.json` (npm run build):
// - date-fns is bundled, once, into dist/vendor/date-fns.js (and its CommonJS twin): the package
//   installs 28 MB for the five functions the vault calls, so a consumer installs none of it;
// - the CommonJS build for `require` (Jest in its default mode, ts-jest, babel-jest): every module of
//   src/, entry/, adapters/ and testing/ transpiled one by one into dist/cjs/ (no bundling, so each
//   module exists once per build), with the declarations copied beside them so `require` gets
//   CommonJS types.
import { copyFile, cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, transform } from 'esbuild'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(root, 'dist/cjs')
/** `import.meta.url` of a CommonJS module: its own file URL. */
const banner = "const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;"

async function* sources(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* sources(path)
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.test.ts'))
      yield path
  }
}

/** Imports of the bundled packages in the ESM build: `import { names } from 'specifier'`. */
const BUNDLED = /import \{([^}]+)\} from '((?:date-fns|@date-fns\/utc)(?:\/[\w-]+)?)';/g

/** Every ESM module of dist/ (not dist/cjs/). */
async function* esmModules(dir = join(root, 'dist')) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (path !== out && entry.name !== 'vendor') yield* esmModules(path)
    } else if (entry.name.endsWith('.js')) yield path
  }
}

/**
 * Bundles what the ESM build imports of date-fns into dist/vendor/date-fns.js and
 * dist/cjs/vendor/date-fns.js (each a module exporting those functions by name), and points the
 * ESM imports at it. Answers the names bundled.
 */
async function bundleDateFns() {
  const imports = new Map()
  const files = []
  for await (const file of esmModules()) {
    const code = await readFile(file, 'utf8')
    if (!code.includes("from 'date-fns") && !code.includes("from '@date-fns")) continue
    files.push([file, code])
    for (const [, names, specifier] of code.matchAll(BUNDLED))
      for (const name of names
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean))
        imports.set(name, specifier)
  }
  const contents = [...imports]
    .map(([name, specifier]) => `export { ${name} } from '${specifier}'`)
    .join('\n')
  for (const [format, dir] of [
    ['esm', join(root, 'dist')],
    ['cjs', out],
  ]) {
    await build({
      stdin: { contents, resolveDir: root, loader: 'js' },
      bundle: true,
      format,
      platform: 'node',
      target: 'node20',
      outfile: join(dir, 'vendor', 'date-fns.js'),
      logLevel: 'warning',
    })
  }
  for (const [file, code] of files) {
    const path = relative(dirname(file), join(root, 'dist/vendor/date-fns.js')).replaceAll('\\', '/')
    const target = path.startsWith('.') ? path : `./${path}`
    await writeFile(
      file,
      code.replace(BUNDLED, (_, names) => `import {${names}} from '${target}';`),
    )
  }
  return [...imports.keys()]
}
const dateFns = await bundleDateFns()

/**
 * Dependencies published as ESM only (nanoid, jose 6), which Jest's CommonJS runtime can't `require`: bundled once
 * into dist/cjs/vendor/ and required from there.
 */
const ESM_ONLY = ['nanoid', 'jose']
for (const name of ESM_ONLY) {
  await build({
    entryPoints: [name],
    absWorkingDir: root,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    outfile: join(out, 'vendor', `${name}.js`),
    logLevel: 'warning',
  })
}
/** `code` with each ESM-only dependency required from its bundled copy, relative to `file`. */
function vendored(code, file) {
  return code.replace(/require\("([^"]+)"\)/g, (whole, name) => {
    const bundled = name.startsWith('date-fns') || name.startsWith('@date-fns/') ? 'date-fns' : undefined
    if (!ESM_ONLY.includes(name) && !bundled) return whole
    const path = relative(dirname(file), join(out, 'vendor', `${bundled ?? name}.js`)).replaceAll('\\', '/')
    return `require(${JSON.stringify(path.startsWith('.') ? path : `./${path}`)})`
  })
}

let count = 0
for (const top of ['src', 'entry', 'adapters', 'testing']) {
  for await (const file of sources(join(root, top))) {
    const rel = relative(root, file).replace(/\.ts$/, '')
    const target = join(out, `${rel}.js`)
    await mkdir(dirname(target), { recursive: true })
    if (rel === 'adapters/sandbox/worker') {
      // The worker awaits at its top level (ESM only): the CommonJS worker loads the ESM one.
      await writeFile(target, "'use strict'\nimport('../../../adapters/sandbox/worker.js')\n")
    } else {
      const code = await readFile(file, 'utf8')
      const result = await transform(code, {
        loader: 'ts',
        format: 'cjs',
        platform: 'node',
        target: 'node20',
        sourcefile: file,
        banner: code.includes('import.meta.url') ? banner : '',
        define: { 'import.meta.url': '__importMetaUrl' },
      })
      await writeFile(target, vendored(result.code, target))
    }
    await copyFile(join(root, 'dist', `${rel}.d.ts`), join(out, `${rel}.d.ts`)).catch(() => {})
    count++
  }
}
// Files the modules read beside themselves: the formula engine's prelude and run driver bundles
// (written by the ESM build; without them every react answers "the formula engine could not be
// loaded"), and the test console's page, script and styles.
for (const bundle of ['prelude.bundle.js', 'driver.bundle.js']) {
  await copyFile(join(root, 'dist/adapters/sandbox', bundle), join(out, 'adapters/sandbox', bundle))
}
await cp(join(root, 'adapters/http/console'), join(out, 'adapters/http/console'), { recursive: true }).catch(
  (error) => {
    if (error.code !== 'ENOENT') throw error
  },
)
await writeFile(join(out, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`)
process.stdout.write(`dist/cjs: ${count} modules; date-fns bundled: ${dateFns.join(', ')}\n`)
