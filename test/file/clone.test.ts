import { describe, expect, it } from 'vitest'
import { cloneJson } from '../../adapters/file/clone.js'

describe('cloneJson', () => {
  it('copies deeply and equals a JSON round trip, dropping what JSON drops', () => {
    const inner = { a: 1, list: [1, 'two', { three: 3 }] }
    const value = {
      inner,
      nothing: undefined,
      fn: () => 1,
      nulls: [undefined, () => 1, null],
      numbers: [Number.NaN, Number.POSITIVE_INFINITY, -0, 1.5],
      date: new Date('2030-01-01T00:00:00.000Z'),
      nested: { deeper: { text: 'ü€' } },
    }
    const copied = cloneJson(value)
    const viaJson = JSON.parse(JSON.stringify(value))
    expect(copied).toStrictEqual(viaJson)
    expect(Object.is((copied.numbers as number[])[2], 0)).toBe(true)
    expect(copied.inner).not.toBe(inner)
    inner.list.push(4)
    expect(copied.inner.list).toHaveLength(3)
    const proto = Object.create({ inherited: 1 }) as Record<string, unknown>
    proto['own'] = 2
    expect(cloneJson(proto)).toStrictEqual({ own: 2 })
  })
})
