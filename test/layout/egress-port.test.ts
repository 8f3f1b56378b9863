/**
 * The core does no network I/O: no file under src/ imports `node:http`, `node:https`, `node:net`,
 * `node:dns` (or their `/promises` and unprefixed forms). The network client is an adapter
 * (adapters/egress) behind the core's `EgressClient` port.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
const NETWORK =
  /(?:from\s*|import\s*\(\s*|require\s*\(\s*)['"](?:node:)?(?:http|https|net|dns|http2|tls|dgram)(?:\/[\w]+)?['"]/

function sources(folder: string): string[] {
  return readdirSync(join(root, folder)).flatMap((name) => {
    const path = join(folder, name)
    if (statSync(join(root, path)).isDirectory()) return sources(path)
    return /\.(?:ts|mts|js|mjs)$/.test(name) ? [path] : []
  })
}

it('no file of src/ imports a network module of Node', () => {
  const offenders = sources('src').filter((file) => NETWORK.test(readFileSync(join(root, file), 'utf8')))
  expect(offenders).toEqual([])
})

it('the check sees every form of such an import', () => {
  for (const line of [
    "import { lookup } from 'node:dns/promises'",
    "import { request } from 'node:https'",
    "import http from 'http'",
    "const net = await import('node:net')",
  ])
    expect({ line, found: NETWORK.test(line) }).toEqual({ line, found: true })
  expect(NETWORK.test("import { createHash } from 'node:crypto'")).toBe(false)
})
