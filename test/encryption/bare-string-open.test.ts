/**
 * A sealed string without an escape in its JSON text opens as its bytes between the quotes, decoded
 * once: no second copy of the text is made to parse it, and no parse runs (a 900 KB value is one
 * large string to the garbage collector, not two). Anything else is parsed as before; the values
 * opened are the same either way.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  newDataKey,
  openValue,
  openValueInSteps,
  sealValue,
  tenantKey,
} from '../../src/encryption/keyring.js'
import { turnsWhile } from '../support/turns.js'

const AAD = 'tokenvault:token:v1:t:id'
const key = tenantKey(newDataKey())

afterEach(() => vi.restoreAllMocks())

const values: unknown[] = [
  '',
  'plain',
  'é€😀 中文',
  'a "quoted" word',
  'back\\slash',
  'line\nbreak\ttab\u0000nul',
  'lone \ud800 surrogate',
  '\u2028\u2029',
  '"',
  "'<&>'",
  42,
  null,
  true,
  ['"a"'],
  { data: '"x"', n: 1 },
]

describe('opening a sealed string', () => {
  it.each(values.map((v) => [JSON.stringify(v), v]))(
    '%s opens to the value sealed, stepped or not',
    async (_, value) => {
      const sealed = sealValue(key, value, AAD)
      expect(openValue(key, sealed, AAD)).toEqual(value)
      expect(await openValueInSteps(key, sealed, AAD, 16)).toEqual(value)
    },
  )

  it('a string without an escape is not parsed; one with an escape, or another value, is', async () => {
    const parse = vi.spyOn(JSON, 'parse')
    const big = 'x'.repeat(300_000)
    expect(openValue(key, sealValue(key, big, AAD), AAD)).toBe(big)
    expect(await openValueInSteps(key, sealValue(key, big, AAD), AAD, 65_536)).toBe(big)
    expect(openValue(key, sealValue(key, 'é€😀', AAD), AAD)).toBe('é€😀')
    expect(parse).not.toHaveBeenCalled()
    expect(openValue(key, sealValue(key, 'a"b', AAD), AAD)).toBe('a"b')
    expect(openValue(key, sealValue(key, { a: 'b' }, AAD), AAD)).toEqual({ a: 'b' })
    expect(parse).toHaveBeenCalledTimes(2)
  })

  it('a large string opens in one turn fewer: decoded after its last decrypt step, never parsed', async () => {
    const bare = await turnsWhile(() =>
      openValueInSteps(key, sealValue(key, 'x'.repeat(9_000), AAD), AAD, 3_000),
    )
    const escaped = await turnsWhile(() =>
      openValueInSteps(key, sealValue(key, `"${'x'.repeat(8_998)}`, AAD), AAD, 3_000),
    )
    expect(bare.value).toBe('x'.repeat(9_000))
    expect(escaped.turns).toBe(bare.turns + 1)
  })
})
