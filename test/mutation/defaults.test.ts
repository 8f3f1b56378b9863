/**
 * Defaults observed as a caller gets them, with no option passed: a running idempotent request holds
 * its key for 1 minute by `createService`'s default (docs/http-api.md, Idempotency): a repeat
 * within that minute answers 409, a repeat once it ran out runs anew (its first presumed lost).
 * Time is the manual clock's.
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import type { FormulaRunner, RunOutcome } from '../../src/kernel/runner.js'
import { failure } from '../core/setup.js'

/** A runner whose first run waits until released (a request stuck in flight), the others answer at once. */
function stuckFirstRunner() {
  let calls = 0
  let release = () => {}
  let entered = () => {}
  const running = new Promise<void>((resolve) => (entered = resolve))
  const runner: FormulaRunner = {
    check: async () => null,
    async run(): Promise<RunOutcome> {
      calls++
      if (calls === 1) {
        entered()
        await new Promise<void>((resolve) => (release = resolve))
      }
      return { ok: true, value: { raw: { call: calls } }, logs: [] }
    },
    close: async () => {},
  }
  return { runner, running, release: () => release() }
}

describe('the idempotency lease by default', () => {
  it('a running request holds its key for 60 000 ms: 409 at 59 999 ms, taken over at 60 000 ms', async () => {
    const { runner, running, release } = stuckFirstRunner()
    const clock = manualClock('2030-01-01T00:00:00.000Z')
    const service = createService({ store: memoryStore(), clock, runner })
    const tenant = await service.admin.createTenant({ name: 't' })
    const app = (type: 'private' | 'management', permissions: ['reactor:create'] | ['token:use']) =>
      service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })
    const admin = await app('management', ['reactor:create'])
    const user = await app('private', ['token:use'])
    const reactor = await service.connect(admin.key).reactors.create({ name: 'r', code: 'x' })
    const client = service.connect(user.key, { idempotencyKey: 'held' })
    const stuck = client.reactors.react(reactor.id, {})
    await running
    clock.advance(59_999)
    expect((await failure(client.reactors.react(reactor.id, {}))).code).toBe('conflict')
    clock.advance(1)
    expect((await client.reactors.react(reactor.id, {})).raw).toEqual({ call: 2 })
    release()
    await stuck
    await service.close()
  })
})
