import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

/** Where the built package keeps the bundled prelude (written by `npm run build`). */
const BUNDLE = new URL('./prelude.bundle.js', import.meta.url)
/** The prelude's sources (adapters/sandbox/prelude/), next to this file when running from TypeScript. */
const ENTRY = new URL('./prelude/index.js', import.meta.url)
/** The run driver's bundle and source (adapters/sandbox/prelude/driver.js), likewise. */
const DRIVER_BUNDLE = new URL('./driver.bundle.js', import.meta.url)
const DRIVER_ENTRY = new URL('./prelude/driver.js', import.meta.url)

/** The esbuild options of the prelude's bundle: one script defining `__prelude` (its exports). */
const options = (entry: string) => ({
  entryPoints: [entry],
  bundle: true,
  format: 'iife' as const,
  globalName: '__prelude',
  target: 'es2020',
  legalComments: 'none' as const,
  logLevel: 'silent' as const,
})

/**
 * The script a run's context evaluates for the prelude: the bundle wrapped in a function (so its
 * names stay local) answering the prelude's exports.
 */
const wrap = (bundle: string) => `(function () {\n${bundle}\nreturn __prelude.default\n})()`

/**
 * The prelude's program text: the bundle `npm run build` wrote next to this file, or, when running
 * from TypeScript sources (tests, development), the sources bundled now with esbuild (a development
 * dependency).
 */
export function preludeSource(): Promise<string> {
  return source(BUNDLE, ENTRY)
}

/**
 * The run driver's program text (adapters/sandbox/prelude/driver.js), bundled as the prelude is:
 * evaluated once as an engine's context is set up, it answers its `setup` function.
 */
export function driverSource(): Promise<string> {
  return source(DRIVER_BUNDLE, DRIVER_ENTRY)
}

async function source(bundle: URL, entry: URL): Promise<string> {
  if (existsSync(bundle)) return wrap(await readFile(bundle, 'utf8'))
  const esbuild = await import('esbuild')
  const result = await esbuild.build({ ...options(fileURLToPath(entry)), write: false })
  return wrap(result.outputFiles[0]!.text)
}

/**
 * Writes a bundle from `entry` (its sources) to `outfile`: the build step of `npm run build`, for
 * the prelude (adapters/sandbox/prelude/index.js) and the run driver (adapters/sandbox/prelude/driver.js).
 */
export async function writePreludeBundle(entry: string, outfile: string): Promise<void> {
  const esbuild = await import('esbuild')
  await esbuild.build({ ...options(entry), outfile })
}
