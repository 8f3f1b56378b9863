/**
 * Formulas run in the CommonJS build: a vault loaded with `require('tokenvault')` from dist/cjs
 * reacts, in a child process of an empty project whose node_modules links the package. It checks
 * dist/ as built (`npm run build` builds it; dist/cjs is written by scripts/build-cjs.mjs).
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '../..')
const run = promisify(execFile)
let project = ''

beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), 'tokenvault-cjs-'))
  await mkdir(join(project, 'node_modules'))
  await symlink(root, join(project, 'node_modules', 'tokenvault'), 'dir')
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }))
})

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true })
})

/** Creates a tenant, a formula, a reactor, and reacts; prints the react's answer or its error. */
const REACT = `
const { createService, manualClock } = require('tokenvault')
const { memoryStore } = require('tokenvault/adapters/memory')
;(async () => {
  const service = await createService({ store: memoryStore(), clock: manualClock(new Date('2030-01-02T03:04:05Z')) })
  try {
    const tenant = await service.admin.createTenant({ name: 'cjs' })
    const ops = await service.admin.createApplication({
      tenantId: tenant.id, name: 'ops', type: 'management', permissions: ['reactor:create', 'reactor:read'],
    })
    const app = await service.admin.createApplication({
      tenantId: tenant.id, name: 'app', type: 'private', permissions: ['token:use'],
    })
    const client = service.connect(ops.key)
    const formula = await client.reactorFormulas.create({
      name: 'echo', type: 'private',
      code: "module.exports = async function (req) { const c = require('crypto'); return { raw: { n: req.args.n * 2, h: c.createHash('sha256').update('abc').digest('hex') } } }",
      configuration: [], request_parameters: [{ name: 'n', type: 'number' }],
    })
    const reactor = await client.reactors.create({ name: 'r', formula_id: formula.id, configuration: {} })
    const answer = await service.connect(app.key).reactors.react(reactor.id, { args: { n: 21 } })
    console.log(JSON.stringify({ raw: answer.raw }))
  } catch (error) {
    console.log(JSON.stringify({ error: String(error && error.message) }))
  } finally {
    await service.close()
  }
})()
`

it('a vault loaded with require reacts: the CommonJS build carries the formula engine', async () => {
  await writeFile(join(project, 'react.cjs'), REACT)
  const { stdout } = await run(process.execPath, ['react.cjs'], {
    cwd: project,
    timeout: 60_000,
    env: { ...process.env, NODE_OPTIONS: '' },
  })
  expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
    raw: { n: 42, h: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' },
  })
}, 90_000)
