/**
 * While another tenant is active, a tenant's share of requests in flight shrinks (2 by default), so
 * another tenant's request waits behind few of its steps. Time is a counter the test moves.
 */
import { describe, expect, it } from 'vitest'
import { Admission, admissionBounds } from '../../adapters/http/admission.js'

function gate(given: Parameters<typeof admissionBounds>[0] = {}) {
  const clock = { ms: 0 }
  const admission = new Admission(admissionBounds(given), () => clock.ms)
  const admitted: string[] = []
  /** Enters `name` under `lane`; `admitted` lists it once it is in. */
  const enter = (lane: string, name: string) => {
    const entered = admission.enter(lane, 0)
    if (entered === true) admitted.push(name)
    else if (entered === false) throw new Error(`${name} refused`)
    else void entered.then(() => admitted.push(name))
  }
  const settle = () => new Promise<void>((go) => setImmediate(go))
  return { admission, clock, admitted, enter, settle }
}

describe('admission: a tenant’s share while another tenant is active', () => {
  it('alone, a tenant has 32 in flight; with another tenant in flight, 2, its third waits', async () => {
    const g = gate()
    for (let i = 0; i < 32; i++) g.enter('a', `a${i}`)
    expect(g.admission.load('a')).toMatchObject({ inFlight: 32, waiting: 0 })
    for (let i = 0; i < 32; i++) g.admission.leave('a', 0)

    g.enter('b', 'b1')
    g.enter('a', 'x1')
    g.enter('a', 'x2')
    g.enter('a', 'x3')
    await g.settle()
    expect(g.admission.load('a')).toMatchObject({ inFlight: 2, waiting: 1 })
    // B's request answered: A stays at 2 while B was active within the last second.
    g.admission.leave('b', 0)
    g.admission.leave('a', 0)
    await g.settle()
    expect(g.admitted.at(-1)).toBe('x3')
    expect(g.admission.load('a')).toMatchObject({ inFlight: 2, waiting: 0 })
  })

  it('the contention lasts 1000 ms after the other tenant’s last answer, then the whole share is back', async () => {
    const g = gate()
    g.enter('b', 'b1')
    g.admission.leave('b', 0)
    for (let i = 0; i < 6; i++) g.enter('a', `a${i}`)
    expect(g.admission.load('a')).toMatchObject({ inFlight: 2, waiting: 4 })
    g.clock.ms = 1000
    g.admission.leave('a', 0)
    await g.settle()
    expect(g.admission.load('a')).toMatchObject({ inFlight: 2, waiting: 3 })
    g.clock.ms = 1001
    g.admission.leave('a', 0)
    await g.settle()
    expect(g.admission.load('a')).toMatchObject({ inFlight: 4, waiting: 0 })
  })

  it('a tenant’s own earlier requests do not count as contention, and the share is a bound of its own', async () => {
    const g = gate({ maxInFlightPerTenantContended: 3 })
    g.enter('a', 'a0')
    g.admission.leave('a', 0)
    for (let i = 1; i <= 5; i++) g.enter('a', `a${i}`)
    expect(g.admission.load('a')).toMatchObject({ inFlight: 5, waiting: 0 })
    g.enter('b', 'b1')
    for (let i = 0; i < 5; i++) g.admission.leave('a', 0)
    // A later turn of the event loop: the requests let in this turn count no more (see admission-turns).
    await new Promise((go) => setImmediate(go))
    for (let i = 6; i <= 9; i++) g.enter('a', `a${i}`)
    expect(g.admission.load('a')).toMatchObject({ inFlight: 3, waiting: 1 })
    expect(() => admissionBounds({ maxInFlightPerTenantContended: 0 })).toThrow(RangeError)
  })
})
