/**
 * The handler's admission totals in all, at their default numbers: 256 requests and 64 MiB of body
 * in flight, 1024 requests waiting. With many tenants active, each has 2 requests in flight (the
 * contended share) and 256 KiB of body (but always one request), so the totals are reached across
 * tenants.
 */
import { describe, expect, it } from 'vitest'
import { Admission, admissionBounds } from '../../adapters/http/admission.js'

const MiB = 1024 * 1024
const admission = () => new Admission(admissionBounds({}), () => 0)
const kind = (entered: true | false | Promise<void>) =>
  entered === true ? 'admitted' : entered === false ? 'refused' : 'waits'

describe('admission: the totals in all, at their numbers', () => {
  it('256 requests in flight in all: the 256th is admitted, the 257th waits', () => {
    const gate = admission()
    const answers: string[] = []
    for (let t = 0; t < 128; t++) for (let i = 0; i < 2; i++) answers.push(kind(gate.enter(`t${t}`, 0)))
    expect(answers.filter((a) => a === 'admitted')).toHaveLength(256)
    expect(kind(gate.enter('t128', 0))).toBe('waits')
  })

  it('1024 requests waiting in all: the 1024th waits, the 1025th is refused', () => {
    const gate = admission()
    for (let t = 0; t < 128; t++) for (let i = 0; i < 2; i++) gate.enter(`t${t}`, 0)
    const answers: string[] = []
    for (let q = 0; q < 8; q++) for (let i = 0; i < 128; i++) answers.push(kind(gate.enter(`q${q}`, 0)))
    expect(answers.filter((a) => a === 'waits')).toHaveLength(1024)
    expect(kind(gate.enter('q8', 0))).toBe('refused')
  })

  it('64 MiB of body in flight in all: 64 bodies of 1 MiB are admitted, one more byte waits', () => {
    // While tenants contend, each gets 256 KiB of body in flight but always one request: 64 tenants
    // with one body of 1 MiB each fill the total.
    const gate = admission()
    const answers: string[] = []
    for (let t = 0; t < 64; t++) answers.push(kind(gate.enter(`t${t}`, MiB)))
    expect(answers.filter((a) => a === 'admitted')).toHaveLength(64)
    expect(kind(gate.enter('t64', 1))).toBe('waits')
    // With one byte less in flight, the same byte gets in.
    const lighter = admission()
    for (let t = 0; t < 64; t++) lighter.enter(`t${t}`, t === 0 ? MiB - 1 : MiB)
    expect(kind(lighter.enter('t64', 1))).toBe('admitted')
  })
})
