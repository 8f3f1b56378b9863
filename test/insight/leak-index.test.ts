import { describe, expect, it } from 'vitest'
import { LeakIndex, type RawFinding } from '../../testing/insight/leak-index.js'

const found = (index: LeakIndex, text: string) => {
  const out: RawFinding[] = []
  index.search(text, (f) => out.push(f))
  return out.filter((f) => f.encoding === 'plain').map((f) => [f.tokenId, f.offset])
}

/**
 * Plaintexts of one kind share their first characters (`holder-…`, every card's base64): a head
 * shared by many is searched by the characters after it too. Each is still found, and only it.
 */
describe('the leak index, plaintexts sharing a head', () => {
  for (const count of [16, 17, 200]) {
    it(`finds each of ${count} plaintexts beginning alike, and none that only begins so`, () => {
      const index = new LeakIndex()
      for (let i = 0; i < count; i++) index.set(`k${i}`, `tok${i}`, `holder-${String(i).padStart(6, '0')}-x`)
      index.set('short', 'tok-short', 'holder7')
      const last = `holder-${String(count - 1).padStart(6, '0')}-x`
      expect(found(index, `log: ${last} done`)).toEqual([[`tok${count - 1}`, 5]])
      expect(found(index, 'log: holder-999999-x done')).toEqual([])
      expect(found(index, 'log: holder7')).toEqual([['tok-short', 5]])
      expect(found(index, `${last.slice(0, -1)}`)).toEqual([])
      index.delete(`k${count - 1}`)
      expect(found(index, `log: ${last} done`)).toEqual([])
    })
  }
})
