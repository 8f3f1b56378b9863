/**
 * The OpenAPI document's names survive code generators: every operationId is an identifier a
 * generator keeps as is (openapi-typescript's `operations` keys, oazapfts's function names),
 * `info.version` is the package's, and the API key schemes are named after their headers.
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateSource } from 'oazapfts'
import openapiTS, { astToString } from 'openapi-typescript'
import { afterAll, expect, it } from 'vitest'
import { openApiDocument } from '../../adapters/http/openapi.js'

const doc = openApiDocument({ basePath: '', headerPrefixes: ['SVC', 'BT'], testControl: true }) as {
  info: { version: string }
  paths: Record<string, Record<string, { operationId: string }>>
  components: { securitySchemes: Record<string, { name?: string }> }
}
const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId))
const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

it('every operationId is a unique identifier, and the usual ones read as what they do', () => {
  expect(ids.length).toBeGreaterThan(40)
  for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z0-9]*$/)
  expect(new Set(ids).size).toBe(ids.length)
  const byRoute = (method: string, path: string) => doc.paths[path]?.[method]?.operationId
  expect(byRoute('get', '/tokens/{id}')).toBe('getToken')
  expect(byRoute('post', '/tokens/{id}/children')).toBe('createTokenChild')
  expect(byRoute('get', '/tokens/{id}/children')).toBe('listTokenChildren')
  expect(byRoute('post', '/tokens/{id}/children/{child}')).toBe('linkTokenChild')
  expect(byRoute('post', '/transactions/{id}/commit')).toBe('commitTransaction')
  expect(byRoute('get', '/v2/tokens')).toBe('listTokensV2')
  expect(byRoute('get', '/healthz')).toBe('getHealth')
})

it('info.version is the version in package.json; the key schemes are SvcApiKey and BtApiKey', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string
  }
  expect(doc.info.version).toBe(pkg.version)
  expect(doc.components.securitySchemes['SvcApiKey']?.name).toBe('SVC-API-KEY')
  expect(doc.components.securitySchemes['BtApiKey']?.name).toBe('BT-API-KEY')
})

it('openapi-typescript keys its operations by each operationId, unquoted', async () => {
  const types = astToString(await openapiTS(doc as unknown as Parameters<typeof openapiTS>[0]))
  const operations = types.slice(types.indexOf('export interface operations'))
  for (const id of ids) expect(operations).toContain(`\n    ${id}: {`)
}, 60_000)

it('oazapfts makes one function per operationId, named as it', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tokenvault-openapi-'))
  dirs.push(dir)
  const file = join(dir, 'openapi.json')
  await writeFile(file, JSON.stringify(doc))
  const source = await generateSource(file)
  for (const id of ids) expect(source).toMatch(new RegExp(`export function ${id}\\(`))
}, 60_000)
