import { describe, expect, it } from 'vitest'
import { key, prefix } from '../../adapters/file/keys.js'

/** The key layout written out byte by byte: every part but the last escaped (0x00 → 01 01, 0x01 → 01 02) and ended by 0x00. */
function reference(parts: string[]): Buffer {
  const bytes: number[] = []
  parts.forEach((part, i) => {
    const utf8 = Buffer.from(part, 'utf8')
    if (i === parts.length - 1) {
      bytes.push(...utf8)
      return
    }
    for (const b of utf8) {
      if (b < 2) bytes.push(1, b + 1)
      else bytes.push(b)
    }
    bytes.push(0)
  })
  return Buffer.from(bytes)
}

/** Strings from a small alphabet full of edge cases: NUL, U+0001, U+0002, Latin-1, astral, a lone surrogate. */
function strings(): string[] {
  const alphabet = ['', 'a', 'b', '\u0000', '\u0001', '\u0002', 'é', '😀', '\ud800', '/', 'Z']
  const out: string[] = []
  for (const x of alphabet) for (const y of alphabet) out.push(x + y)
  return out
}

describe('file store keys', () => {
  it('encode every tuple as the byte layout says, escapes included', () => {
    const all = strings()
    for (const a of all)
      for (const b of all.slice(0, 30)) {
        expect(key(a, b)).toEqual(reference([a, b]))
        expect(key('tenant', a, b)).toEqual(reference(['tenant', a, b]))
        expect(prefix(a, b).start).toEqual(reference([a, b, '']))
      }
  })

  it('sort as tuples: by the first part, then the next', () => {
    const all = strings().filter((s) => !s.includes('\ud800'))
    const tuples = all.flatMap((a) => all.slice(0, 20).map((b) => [a, b] as const))
    const byBytes = [...tuples].sort((x, y) => Buffer.compare(key(...x), key(...y)))
    const cmp = (p: string, q: string) => Buffer.compare(Buffer.from(p, 'utf8'), Buffer.from(q, 'utf8'))
    const byTuple = [...tuples].sort((x, y) => cmp(x[0], y[0]) || cmp(x[1], y[1]))
    expect(byBytes).toEqual(byTuple)
  })

  it('a prefix range holds exactly the keys under its parts', () => {
    const { start, end } = prefix('t', 'a')
    const inside = (k: Buffer) => Buffer.compare(k, start) >= 0 && Buffer.compare(k, end) < 0
    expect(inside(key('t', 'a', 'x'))).toBe(true)
    expect(inside(key('t', 'a', '\u0000'))).toBe(true)
    expect(inside(key('t', 'a\u0000', 'x'))).toBe(false)
    expect(inside(key('t', 'ab', 'x'))).toBe(false)
    expect(inside(key('t', 'a', 'x', 'y'))).toBe(true)
  })
})
