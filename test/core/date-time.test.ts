import { afterEach, describe, expect, it } from 'vitest'
import { parseDateTime } from '../../src/kernel/date-time.js'

// Every form the reference documents for `expires_at`, with the instant it names.
const accepted: [string, string][] = [
  ['2030-08-26T19:23:57-07:00', '2030-08-27T02:23:57.000Z'],
  ['2030-08-26T19:23:57+14:59', '2030-08-26T04:24:57.000Z'],
  ['2030-08-26T19:23:57.5Z', '2030-08-26T19:23:57.500Z'],
  ['2030-08-26T19:23:57.123456789Z', '2030-08-26T19:23:57.123Z'],
  ['2030-08-26T19:23:57', '2030-08-26T19:23:57.000Z'],
  ['2030-08-26T19:23Z', '2030-08-26T19:23:00.000Z'],
  ['2030-08-26', '2030-08-26T00:00:00.000Z'],
  ['2024-02-29', '2024-02-29T00:00:00.000Z'],
  ['0000-01-01', '0000-01-01T00:00:00.000Z'],
  ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
  ['8/26/2030 7:23:57 PM -07:00', '2030-08-27T02:23:57.000Z'],
  ['8/26/2030 7:23:57 AM +02:00', '2030-08-26T05:23:57.000Z'],
  ['8/26/2030 7:23:57PM-07:00', '2030-08-27T02:23:57.000Z'],
  ['8/26/2030 12:00:00 AM', '2030-08-26T00:00:00.000Z'],
  ['8/26/2030 12:30 PM', '2030-08-26T12:30:00.000Z'],
  ['8/26/2030 7:23 pm', '2030-08-26T19:23:00.000Z'],
  ['8/26/2030 19:23:57', '2030-08-26T19:23:57.000Z'],
  ['8/26/2030 7:23:57.1234567 PM Z', '2030-08-26T19:23:57.123Z'],
  ['08/06/2030 0:05', '2030-08-06T00:05:00.000Z'],
  ['9/27/2030', '2030-09-27T00:00:00.000Z'],
  ['2/29/2000', '2000-02-29T00:00:00.000Z'],
]

const refused = [
  '2/30/2030',
  '2/29/1900',
  '13/1/2030',
  '8/26/2030 13:00:00 PM',
  '8/26/2030 0:00 AM',
  '8/26/2030 24:00:00',
  '8/26/2030 7:23:57 PM -25:00',
  '2030-08-26T19:23:57+15:00',
  '2030-08-26T19:23:57+14:60',
  '2030-08-26T24:00:00Z',
  '2030-08-26T23:60Z',
  '2030-08-26T23:59:60Z',
  '2030-02-30',
  '2023-02-29',
  '2030-8-26',
  '2030-08-26T19:23:57.',
  ' 2030-08-26',
  '2030-08-26 ',
  '2030-W35',
  '10000-01-01',
  '8/26/30',
  'tomorrow',
  '',
]

describe('parseDateTime', () => {
  const zone = process.env.TZ
  afterEach(() => {
    if (zone === undefined) delete process.env.TZ
    else process.env.TZ = zone
  })

  it.each(accepted)('reads %s as %s, and its answer reads back as itself', (given, instant) => {
    expect(parseDateTime(given)).toBe(instant)
    expect(parseDateTime(instant)).toBe(instant)
  })

  it.each(refused)('refuses %j', (given) => {
    expect(parseDateTime(given)).toBeNull()
  })

  it('answers the same instant whatever the host time zone', () => {
    for (const tz of ['UTC', 'America/Los_Angeles', 'Asia/Kolkata', 'Pacific/Kiritimati']) {
      process.env.TZ = tz
      for (const [given, instant] of accepted) expect(parseDateTime(given), `${given} in ${tz}`).toBe(instant)
    }
  })
})
