import { describe, expect, it } from 'vitest'
import { recoveryReporter } from '../../bin/progress.js'

describe('CLI recovery progress line', () => {
  it('prints nothing for an open under a second, then a line a second, and the last at 100 %', () => {
    let clock = 0
    const lines: string[] = []
    const report = recoveryReporter(
      (l) => lines.push(l),
      () => clock,
    )
    const MiB = 2 ** 20
    report({ bytesRead: 10 * MiB, totalBytes: 100 * MiB })
    clock = 900
    report({ bytesRead: 30 * MiB, totalBytes: 100 * MiB })
    expect(lines).toEqual([])
    clock = 1200
    report({ bytesRead: 40 * MiB, totalBytes: 100 * MiB })
    clock = 1700
    report({ bytesRead: 60 * MiB, totalBytes: 100 * MiB })
    clock = 2300
    report({ bytesRead: 75 * MiB, totalBytes: 100 * MiB })
    clock = 2400
    report({ bytesRead: 100 * MiB, totalBytes: 100 * MiB })
    expect(lines).toEqual([
      'recovering: 40 % (40.0 of 100.0 MiB, 1.2 s)',
      'recovering: 75 % (75.0 of 100.0 MiB, 2.3 s)',
      'recovering: 100 % (100.0 of 100.0 MiB, 2.4 s)',
    ])
  })

  it('stays silent when the whole open ends within the second', () => {
    let clock = 0
    const lines: string[] = []
    const report = recoveryReporter(
      (l) => lines.push(l),
      () => clock,
    )
    clock = 999
    report({ bytesRead: 5, totalBytes: 5 })
    expect(lines).toEqual([])
  })
})
