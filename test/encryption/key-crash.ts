/**
 * The data-key crash scenarios, run against a durable store (file, PostgreSQL) by the files that
 * open one: a child process (`key-child.ts`) seals or sweeps and is killed with SIGKILL midway.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'
import { createService, systemClock } from '../../entry/index.js'
import { sealedVersion } from '../../src/encryption/keyring.js'
import type { Store } from '../../src/store/contract.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CHILD = fileURLToPath(new URL('./key-child.ts', import.meta.url))

const REVEAL = {
  description: 'all',
  priority: 1,
  container: '/',
  transform: 'reveal' as const,
  permissions: ['token:create' as const, 'token:read' as const, 'token:update' as const],
}

/** Runs the child with `args` until `stop(line, lines)` says so, then SIGKILLs it; answers its lines. */
async function runUntil(args: string[], stop: (line: string, lines: string[]) => boolean): Promise<string[]> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: process.env,
  })
  const lines: string[] = []
  let buffered = ''
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString()
    const parts = buffered.split('\n')
    buffered = parts.pop() ?? ''
    for (const line of parts) {
      lines.push(line)
      if (stop(line, lines)) child.kill('SIGKILL')
    }
  })
  await new Promise<void>((resolve) => child.once('close', () => resolve()))
  if (child.signalCode !== 'SIGKILL') throw new Error(`child exited by itself (${child.exitCode}): ${stderr}`)
  return lines
}

/** A vault over a fresh store: one tenant, a key that creates, reads and updates. */
async function setUp(open: () => Promise<Store>) {
  const masterKey = randomBytes(32)
  const store = await open()
  const service = createService({
    store,
    clock: systemClock,
    runner: null,
    masterKey,
    dataKeys: { refreshMs: 0 },
  })
  const tenant = await service.admin.createTenant({ name: 'crash' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions: ['token:create', 'token:read', 'token:update'],
    rules: [REVEAL],
  })
  return { masterKey, store, service, tenantId: tenant.id, key }
}

/**
 * The seal counter under SIGKILL: a child seals with blocks of 16 and is killed after 37
 * acknowledged seals; the stored count is at least every acknowledged seal, and a second child
 * counts on from there (never back).
 */
export async function counterSurvivesKill(spec: string, open: () => Promise<Store>): Promise<void> {
  const v = await setUp(open)
  await v.service.close()
  const master = v.masterKey.toString('base64')
  const acks = (lines: string[]) => lines.filter((l) => l.startsWith('ack '))
  const first = acks(
    await runUntil(['seal', spec, master, v.key, '500', '16'], (_l, all) => acks(all).length >= 37),
  )
  expect(first.length).toBeGreaterThanOrEqual(37)
  const reopened = await open()
  const service = createService({ store: reopened, clock: systemClock, runner: null, masterKey: v.masterKey })
  const before = (await service.admin.dataKeyStatus({ tenantId: v.tenantId })).sealed
  expect(before).toBeGreaterThanOrEqual(first.length)
  expect(before).toBeLessThanOrEqual(first.length + 32)
  const second = acks(await runUntil(['seal', spec, master, v.key, '20', '16'], (line) => line === 'done'))
  expect(second).toHaveLength(20)
  const after = (await service.admin.dataKeyStatus({ tenantId: v.tenantId })).sealed
  expect(after).toBeGreaterThanOrEqual(before + 20)
  const client = service.connect(v.key)
  for (const line of [...first, ...second]) {
    const [, id, n] = line.split(' ')
    expect((await client.tokens.get(id!)).data).toEqual({ n: Number(n) })
  }
  await service.close()
}

/**
 * The re-encryption sweep under SIGKILL: 300 tokens under v1, a rotation, a child sweeping in
 * batches of 25 killed after 4 steps, a second child resuming (while this process updates 40
 * tokens) to the end: every token on v2, v1 retired, none lost, every update kept.
 */
export async function sweepSurvivesKill(spec: string, open: () => Promise<Store>): Promise<void> {
  const v = await setUp(open)
  const client = v.service.connect(v.key)
  const ids: string[] = []
  for (let n = 0; n < 300; n++) ids.push((await client.tokens.create({ type: 'token', data: { n } })).id)
  await v.service.admin.rotateDataKey({ tenantId: v.tenantId })
  const master = v.masterKey.toString('base64')
  const steps = (lines: string[]) => lines.filter((l) => l.startsWith('step '))
  const first = steps(
    await runUntil(['sweep', spec, master, v.tenantId, '25'], (_l, all) => steps(all).length >= 4),
  )
  const doneBefore = Number(first.at(-1)!.split(' ')[1])
  expect(doneBefore).toBeGreaterThanOrEqual(100)
  const updated = ids.slice(0, 40)
  let resumedAt = -1
  const sweep = runUntil(['sweep', spec, master, v.tenantId, '25'], (line) => {
    if (line.startsWith('step ') && resumedAt < 0) resumedAt = Number(line.split(' ')[1])
    return line === 'finished' || line === 'unfinished'
  })
  await Promise.all(updated.map((id, i) => client.tokens.update(id, { data: { n: i, updated: true } })))
  const second = await sweep
  expect(second).toContain('finished')
  // It resumed from the place stored, not from the start.
  expect(resumedAt).toBeGreaterThanOrEqual(doneBefore)
  const status = await v.service.admin.dataKeyStatus({ tenantId: v.tenantId })
  expect(status.versions.map((x) => x.version)).toEqual([2])
  const dump = await v.store.dump()
  const mine = dump.tokens.filter((t) => t.tenant_id === v.tenantId)
  expect(mine).toHaveLength(300)
  for (const t of mine) expect(sealedVersion((t.data as { $sealed: string }).$sealed)).toBe(2)
  for (const [i, id] of ids.entries()) {
    const data = (await client.tokens.get(id)).data
    expect(data).toEqual(i < 40 ? { n: i, updated: true } : { n: i })
  }
  await v.service.close()
}
