import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

/** Where the built package keeps the bundled prelude (written by `npm run build`). */
const BUNDLE = new URL('./prelude.bundle.js', import.meta.url)
/** The prelude's sources (adapters/sandbox/prelude/), next to this file when running from TypeScript. */
const ENTRY = new URL('./prelude/index.js', import.meta.url)

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
export async function preludeSource(): Promise<string> {
  if (existsSync(BUNDLE)) return wrap(await readFile(BUNDLE, 'utf8'))
  const esbuild = await import('esbuild')
  const result = await esbuild.build({ ...options(fileURLToPath(ENTRY)), write: false })
  return wrap(result.outputFiles[0]!.text)
}

/** Writes the prelude's bundle from `entry` (its sources) to `outfile`: the build step of `npm run build`. */
export async function writePreludeBundle(entry: string, outfile: string): Promise<void> {
  const esbuild = await import('esbuild')
  await esbuild.build({ ...options(entry), outfile })
}
