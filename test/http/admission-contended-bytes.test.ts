/**
 * While another tenant is active, a tenant's body bytes in flight shrink to 256 KiB by default
 * (`maxInFlightBytesPerTenantContended`), one request always passing: another tenant's request
 * then waits behind the steps of one large body, not two. Time is a counter the test moves.
 */
import { describe, expect, it } from 'vitest'
import { Admission, admissionBounds } from '../../adapters/http/admission.js'

function gate() {
  const clock = { ms: 0 }
  const admission = new Admission(admissionBounds({}), () => clock.ms)
  const enter = (lane: string, bytes: number) => {
    const entered = admission.enter(lane, bytes)
    if (entered === false) throw new Error(`refused in ${lane}`)
    return entered === true
  }
  return { admission, clock, enter }
}

describe('admission: a tenant’s body bytes while another tenant is active', () => {
  it('two bodies of 262144 bytes in all pass; one byte more waits while another tenant is active', async () => {
    const g = gate()
    expect(g.enter('b', 0)).toBe(true)
    expect(g.enter('a', 131_072)).toBe(true)
    expect(g.enter('a', 131_072)).toBe(true)
    for (let i = 0; i < 2; i++) g.admission.leave('a', 131_072)
    // A later turn of the event loop: the two let in this turn count no more (see admission-turns).
    await new Promise((go) => setImmediate(go))
    expect(g.enter('a', 131_072)).toBe(true)
    expect(g.enter('a', 131_073)).toBe(false)
    expect(g.admission.load('a')).toMatchObject({ inFlight: 1, waiting: 1 })
  })

  it('one 400 KB body passes at once (nothing else of its tenant in flight); a second waits for it', async () => {
    const g = gate()
    expect(g.enter('b', 0)).toBe(true)
    expect(g.enter('a', 400_000)).toBe(true)
    expect(g.enter('a', 400_000)).toBe(false)
    g.admission.leave('a', 400_000)
    await new Promise((go) => setImmediate(go))
    expect(g.admission.load('a')).toMatchObject({ inFlight: 1, waiting: 0 })
  })

  it('alone (no other tenant for over 1000 ms), a tenant has its whole 2 MiB of bodies in flight', () => {
    const g = gate()
    expect(g.enter('b', 0)).toBe(true)
    g.admission.leave('b', 0)
    g.clock.ms = 1001
    for (let i = 0; i < 5; i++) expect(g.enter('a', 400_000)).toBe(true)
    expect(g.admission.load('a')).toMatchObject({ inFlight: 5, waiting: 0 })
  })

  it('the bound is an option: 1 MiB lets two 400 KB bodies in while another tenant is active', () => {
    const admission = new Admission(admissionBounds({ maxInFlightBytesPerTenantContended: 1_048_576 }))
    expect(admission.enter('b', 0)).toBe(true)
    expect(admission.enter('a', 400_000)).toBe(true)
    expect(admission.enter('a', 400_000)).toBe(true)
    expect(admission.enter('a', 400_000)).not.toBe(true)
  })
})
