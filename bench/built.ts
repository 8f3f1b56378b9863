/**
 * The built package (`dist/`), as an application imports it. Benchmarks that measure the service
 * in process load it from here rather than from the TypeScript sources: tsx compiles the sources on
 * the fly with every function wrapped to keep its name, which costs a call through the service
 * about a third more than the published JavaScript does. `npm run bench` builds first.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

type Entry = typeof import('../entry/index.js')
type Memory = typeof import('../adapters/memory/index.js')
type File = typeof import('../adapters/file/index.js')
type Sandbox = typeof import('../adapters/sandbox/index.js')
type Http = typeof import('../adapters/http/index.js')
type Postgres = typeof import('../adapters/postgres/index.js')

const dist = new URL('../dist/', import.meta.url)

/** Imports `path` (relative to `dist/`) from the build; throws saying to build when there is none. */
export async function load<T>(path: string): Promise<T> {
  const url = new URL(path, dist)
  if (!existsSync(fileURLToPath(url))) {
    throw new Error(`bench: dist/${path} is missing: run \`npm run build\` first`)
  }
  return (await import(url.href)) as T
}

/**
 * The package's entry, its memory and file stores, the sandbox runner and the HTTP adapter, from
 * `dist/` (no PostgreSQL: `pg` is optional).
 */
export async function built(): Promise<{
  entry: Entry
  memory: Memory
  file: File
  sandbox: Sandbox
  http: Http
}> {
  return {
    entry: await load<Entry>('entry/index.js'),
    memory: await load<Memory>('adapters/memory/index.js'),
    file: await load<File>('adapters/file/index.js'),
    sandbox: await load<Sandbox>('adapters/sandbox/index.js'),
    http: await load<Http>('adapters/http/index.js'),
  }
}

/** The PostgreSQL store from `dist/`, for the benchmarks that have a server (it needs the optional `pg`). */
export async function builtPostgres(): Promise<Postgres> {
  return load<Postgres>('adapters/postgres/index.js')
}
