/**
 * The asynchronous-react crash scenario, run against a durable store (file, PostgreSQL) by the
 * files that open one: a child process (`async-react-child.ts`) accepts a react and is SIGKILLed
 * while the run is under way; a new service on the same store runs it once the claim ends (the
 * run's 10 s limit + 5 s, on a manual clock here) and answers its result by the request id.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'
import { createService, manualClock, systemClock } from '../../entry/index.js'
import type { FormulaRunner } from '../../src/kernel/index.js'
import type { Store } from '../../src/store/index.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CHILD = fileURLToPath(new URL('./async-react-child.ts', import.meta.url))

/** Runs the child until its run starts, then SIGKILLs it; answers the request id it accepted. */
async function acceptThenKill(args: string[]): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: process.env,
  })
  let out = ''
  let err = ''
  child.stderr.on('data', (c: Buffer) => {
    err += c.toString()
  })
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString()
    if (out.includes('running\n') && out.includes('accepted ')) child.kill('SIGKILL')
  })
  await new Promise<void>((resolve) => child.once('close', () => resolve()))
  if (child.signalCode !== 'SIGKILL') throw new Error(`child exited by itself (${child.exitCode}): ${err}`)
  return /accepted (\S+)/.exec(out)![1]!
}

export async function asyncReactSurvivesKill(spec: string, open: () => Promise<Store>): Promise<void> {
  const masterKey = randomBytes(32)
  const runs: unknown[] = []
  const runner: FormulaRunner = {
    check: async () => null,
    run: async (_code, request) => {
      runs.push(request.args)
      const { a, b } = request.args as { a: number; b: number }
      return { ok: true, value: { raw: { sum: a + b } }, logs: [] }
    },
    close: async () => {},
  }
  const setup = createService({ store: await open(), clock: systemClock, runner, masterKey })
  const tenant = await setup.admin.createTenant({ name: 'crash' })
  const app = (type: 'management' | 'private', permissions: ['reactor:create'] | ['token:use']) =>
    setup.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
  const management = await app('management', ['reactor:create'])
  const user = await app('private', ['token:use'])
  const reactor = await setup
    .connect(management.key)
    .reactors.create({ name: 'r', code: 'module.exports = 1' })
  await setup.close()
  const requestId = await acceptThenKill([spec, masterKey.toString('base64'), user.key, reactor.id])
  // The child's claim lasts 15 s from its start: a clock 16 s on sees the react due again.
  const clock = manualClock(new Date(Date.now() + 16_000))
  const service = createService({ store: await open(), clock, runner, masterKey })
  const client = service.connect(user.key)
  await expect(client.reactors.result(reactor.id, requestId)).rejects.toMatchObject({ code: 'conflict' })
  await service.admin.webhooks.deliverDue()
  expect(runs).toEqual([{ a: 2, b: 3 }])
  expect(await client.reactors.result(reactor.id, requestId)).toEqual({ raw: { sum: 5 }, tokens: {} })
  await service.close()
}
