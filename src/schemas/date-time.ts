/**
 * The date-time formats the reference accepts for `expires_at`:
 * - ISO 8601: `2030-08-26T19:23:57-07:00`, `2030-08-26T19:23:57.5Z`, `2030-08-26T19:23:57` (no offset:
 *   UTC), `2030-08-26` (midnight UTC);
 * - a `DateTime` string: `8/26/2030 7:23:57 PM -07:00`, with or without seconds, `AM`/`PM` or the
 *   offset (no offset: UTC);
 * - a `ShortDate` string: `9/27/2030` (midnight UTC).
 */
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:\d{2})?$/
const US =
  /^(\d{1,2})\/(\d{1,2})\/(\d{4})(?: +(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?(?: *([AaPp][Mm]))?(?: *(Z|[+-]\d{2}:\d{2}))?)?$/

interface Parts {
  year: number
  month: number
  day: number
  hour: number
  minute: number
  second: number
  fraction: string
  /** Minutes east of UTC. */
  offset: number
}

function offsetMinutes(text: string | undefined): number | null {
  if (text === undefined || text === 'Z') return 0
  const sign = text.startsWith('-') ? -1 : 1
  const hours = Number(text.slice(1, 3))
  const minutes = Number(text.slice(4, 6))
  if (hours > 14 || minutes > 59) return null
  return sign * (hours * 60 + minutes)
}

function fromIso(m: RegExpExecArray): Parts | null {
  const offset = offsetMinutes(m[8])
  if (offset === null) return null
  return {
    year: Number(m[1]),
    month: Number(m[2]),
    day: Number(m[3]),
    hour: Number(m[4] ?? 0),
    minute: Number(m[5] ?? 0),
    second: Number(m[6] ?? 0),
    fraction: m[7] ?? '',
    offset,
  }
}

function fromUs(m: RegExpExecArray): Parts | null {
  const offset = offsetMinutes(m[9])
  if (offset === null) return null
  let hour = Number(m[4] ?? 0)
  const meridiem = m[8]?.toUpperCase()
  if (meridiem !== undefined) {
    if (hour < 1 || hour > 12) return null
    hour = (hour % 12) + (meridiem === 'PM' ? 12 : 0)
  }
  return {
    year: Number(m[3]),
    month: Number(m[1]),
    day: Number(m[2]),
    hour,
    minute: Number(m[5] ?? 0),
    second: Number(m[6] ?? 0),
    fraction: m[7] ?? '',
    offset,
  }
}

/**
 * Parses one of the accepted formats into an ISO 8601 UTC string (`toISOString`), or answers null
 * for anything else: another shape, a day or time that does not exist (February 30, 24:00, 13 PM),
 * or a result outside the years 0000–9999.
 */
export function parseDateTime(text: string): string | null {
  const iso = ISO.exec(text)
  const us = iso ? null : US.exec(text)
  const p = iso ? fromIso(iso) : us ? fromUs(us) : null
  if (p === null) return null
  if (p.month < 1 || p.month > 12 || p.hour > 23 || p.minute > 59 || p.second > 59) return null
  const day = new Date(0)
  day.setUTCFullYear(p.year, p.month - 1, p.day)
  if (day.getUTCFullYear() !== p.year || day.getUTCMonth() !== p.month - 1 || day.getUTCDate() !== p.day) {
    return null
  }
  const ms = Math.floor(Number(`0.${p.fraction || '0'}`) * 1000)
  const at = new Date(0)
  at.setUTCFullYear(p.year, p.month - 1, p.day)
  at.setUTCHours(p.hour, p.minute - p.offset, p.second, ms)
  const out = at.toISOString()
  return /^\d{4}-/.test(out) ? out : null
}
