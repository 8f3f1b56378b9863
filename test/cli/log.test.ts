import { afterEach, describe, expect, it, vi } from 'vitest'
import { bufferedLog } from '../../bin/serve.js'

afterEach(() => {
  vi.useRealTimers()
})

describe('bufferedLog', () => {
  it('writes the lines of a burst together, once, after the delay', () => {
    vi.useFakeTimers()
    const writes: string[] = []
    const { log, close } = bufferedLog((text) => writes.push(text), { delayMs: 20 })
    log('one')
    log('two')
    log('three')
    expect(writes).toEqual([])
    vi.advanceTimersByTime(19)
    expect(writes).toEqual([])
    vi.advanceTimersByTime(1)
    expect(writes).toEqual(['one\ntwo\nthree\n'])
    vi.advanceTimersByTime(100)
    expect(writes).toHaveLength(1)
    log('four')
    close()
    expect(writes).toEqual(['one\ntwo\nthree\n', 'four\n'])
  })

  it('writes at once past its size, and flushes on demand', () => {
    vi.useFakeTimers()
    const writes: string[] = []
    const { log, flush, close } = bufferedLog((text) => writes.push(text), { delayMs: 1000, maxChars: 10 })
    log('12345')
    expect(writes).toEqual([])
    log('67890')
    expect(writes).toEqual(['12345\n67890\n'])
    log('x')
    flush()
    flush()
    expect(writes).toEqual(['12345\n67890\n', 'x\n'])
    close()
  })
})
