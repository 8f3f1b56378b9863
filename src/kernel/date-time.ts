import { isValid } from 'date-fns/isValid'
import { parse } from 'date-fns/parse'

/**
 * The date-time formats the reference accepts for `expires_at`:
 * - ISO 8601: `2030-08-26T19:23:57-07:00`, `2030-08-26T19:23:57.5Z`, `2030-08-26T19:23:57` (no offset:
 *   UTC), `2030-08-26` (midnight UTC);
 * - a `DateTime` string: `8/26/2030 7:23:57 PM -07:00`, with or without seconds, `AM`/`PM` or the
 *   offset (no offset: UTC);
 * - a `ShortDate` string: `9/27/2030` (midnight UTC).
 *
 * The regular expressions below only decide the shape (which parts are present, how many digits
 * each has, offsets within ±14:59); date-fns `parse` reads the values and checks the calendar
 * (February 30, 24:00, 13 PM are invalid dates to it). Every text is given an explicit offset
 * before it is parsed, so the host's time zone never matters.
 */
const OFFSET = '(Z|[+-](?:0\\d|1[0-4]):[0-5]\\d)'
const ISO = new RegExp(
  `^(\\d{4}-\\d{2}-\\d{2})(?:T(\\d{2}:\\d{2})(?::(\\d{2})(?:\\.(\\d{1,9}))?)?)?${OFFSET}?$`,
)
const US = new RegExp(
  `^(\\d{1,2}/\\d{1,2}/\\d{4})(?: +(\\d{1,2}:\\d{2})(?::(\\d{2})(?:\\.(\\d{1,7}))?)?(?: *([AaPp][Mm]))?(?: *${OFFSET})?)?$`,
)

/** What a text holds, in the order date-fns reads it back from the canonical text built below. */
interface Shape {
  date: string
  dateFormat: string
  time: string | undefined
  seconds: string | undefined
  fraction: string | undefined
  meridiem: string | undefined
  offset: string | undefined
}

function shapeOf(text: string): Shape | null {
  const iso = ISO.exec(text)
  if (iso) {
    const [, date = '', time, seconds, fraction, offset] = iso
    return { date, dateFormat: 'uuuu-MM-dd', time, seconds, fraction, meridiem: undefined, offset }
  }
  const us = US.exec(text)
  if (us) {
    const [, date = '', time, seconds, fraction, meridiem, offset] = us
    return { date, dateFormat: 'M/d/uuuu', time, seconds, fraction, meridiem, offset }
  }
  return null
}

/**
 * Parses one of the accepted formats into an ISO 8601 UTC string (`toISOString`), or answers null
 * for anything else: another shape, a day or time that does not exist (February 30, 24:00, 13 PM),
 * or a result outside the years 0000–9999. Fractions of a second keep their milliseconds (cut, not
 * rounded).
 */
export function parseDateTime(text: string): string | null {
  const s = shapeOf(text)
  if (s === null) return null
  // A canonical text with every present part in one place, and the pattern that reads it.
  let value = s.date
  let pattern = s.dateFormat
  if (s.time !== undefined) {
    const clock = s.meridiem === undefined ? 'HH:mm' : 'hh:mm'
    value += ` ${s.time.padStart(5, '0')}:${s.seconds ?? '00'}.${(s.fraction ?? '').padEnd(3, '0').slice(0, 3)}`
    pattern += ` ${clock}:ss.SSS`
    if (s.meridiem !== undefined) {
      value += ` ${s.meridiem.toUpperCase()}`
      pattern += ' a'
    }
  }
  value += ` ${s.offset ?? 'Z'}`
  pattern += ' XXX'
  const at = parse(value, pattern, new Date(0))
  if (!isValid(at)) return null
  const out = at.toISOString()
  return /^\d{4}-/.test(out) ? out : null
}
