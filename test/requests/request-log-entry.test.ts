import { describe, expect, it } from 'vitest'
import { RequestLog, TRACES_KEPT } from '../../adapters/http/request-log.js'
import type { AccessDecision, AccessTrace, Transform } from '../../src/kernel/index.js'

/** A decision whose trace names it, so the kept ones can be told apart. */
function decision(n: number, made: Transform | null = 'mask'): AccessDecision {
  return {
    permission: 'token:read',
    decision: made,
    trace: () => ({ reason: `decision ${n}` }) as unknown as AccessTrace,
  }
}

const finished = (id: string, ms = 1) => ({
  request_id: id,
  kind: 'api' as const,
  method: 'GET',
  path: '/tokens/t',
  search: '',
  status: 200,
  ms,
  problemBody: null,
})

describe("a request log entry, built when read from what the exchange's witness kept", () => {
  it(`keeps the first ${TRACES_KEPT - 1} decisions and the last, never a reveal`, () => {
    const log = new RequestLog({ now: () => new Date(0) })
    const witness = log.begin()
    witness.recorder.decided(decision(0, 'reveal'))
    for (let n = 1; n <= 25; n++) witness.recorder.decided(decision(n))
    witness.recorder.decided(decision(26, 'reveal'))
    log.finish(finished('r1'), witness)
    const reasons = log.get('r1')!.trace!.map((t) => (t as unknown as { reason: string }).reason)
    expect(TRACES_KEPT).toBe(20)
    expect(reasons).toEqual([...Array.from({ length: 19 }, (_, i) => `decision ${i + 1}`), 'decision 25'])
  })

  it('keeps one decision, and none (no trace) when every decision revealed', () => {
    const log = new RequestLog({ now: () => new Date(0) })
    const one = log.begin()
    one.recorder.decided(decision(1, null))
    log.finish(finished('one'), one)
    const none = log.begin()
    none.recorder.decided(decision(2, 'reveal'))
    log.finish(finished('none'), none)
    expect(log.get('one')!.trace).toEqual([{ reason: 'decision 1' }])
    expect(log.get('none')).not.toHaveProperty('trace')
  })

  it('keeps every journal entry in order with its operation, and the last caller named', () => {
    const log = new RequestLog({ now: () => new Date(0) })
    const witness = log.begin()
    const journaled = (seq: number, operation: string, tenant: string | null) =>
      witness.recorder.journaled({ seq, tenant_id: tenant, actor_id: tenant && `app-${tenant}`, operation })
    journaled(7, 'token.create', 'A')
    journaled(8, 'token.get', null)
    journaled(11, 'token.delete', 'B')
    log.finish(finished('r1'), witness)
    const empty = log.begin()
    log.finish(finished('r2'), empty)
    expect(log.get('r1')).toMatchObject({
      journal: [7, 8, 11],
      operations: ['token.create', 'token.get', 'token.delete'],
      tenant_id: 'B',
      actor_id: 'app-B',
    })
    expect(log.get('r2')).toMatchObject({ journal: [], operations: [], tenant_id: null, actor_id: null })
  })

  it('answers its duration to the microsecond and its times in ISO 8601', () => {
    let now = Date.parse('2030-01-01T00:00:00.000Z')
    const log = new RequestLog({ now: () => new Date(now) })
    const witness = log.begin()
    now += 5000
    log.finish(finished('r1', 1.23456789), witness)
    const entry = log.get('r1')!
    expect(entry.ms).toBe(1.235)
    expect(entry.at).toBe('2030-01-01T00:00:00.000Z')
    expect(entry.wall).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  })

  it('answers a copy: changing an entry read changes nothing kept', () => {
    const log = new RequestLog({ now: () => new Date(0) })
    const witness = log.begin()
    witness.recorder.journaled({ seq: 1, tenant_id: null, actor_id: null, operation: 'token.get' })
    log.finish(finished('r1'), witness)
    const read = log.get('r1')!
    read.journal.push(99)
    read.operations.push('x')
    expect(log.get('r1')).toMatchObject({ journal: [1], operations: ['token.get'] })
  })
})
