import { ServiceError } from '../../src/kernel/index.js'

/** A whole number from the query (at most 15 digits), or undefined when absent. */
export function whole(q: URLSearchParams, name: string): number | undefined {
  const value = q.get(name)
  if (value === null) return undefined
  if (!/^\d{1,15}$/.test(value))
    throw new ServiceError('validation_failed', `${name}: a whole number`, {
      issues: { [name]: ['a whole number'] },
    })
  return Number(value)
}

/** A path segment percent-decoded, or a 400 when it is not valid percent-encoding. */
export function decodePart(part: string): string {
  try {
    return decodeURIComponent(part)
  } catch {
    throw new ServiceError('validation_failed', 'the path is not valid percent-encoding', {
      issues: { path: ['is malformed'] },
    })
  }
}

/** `AdminView.logs`'s query from the URL's (`entity_type`, `entity_id`, `start_date`, `end_date`, `start`, `size`; empty ones left out). */
export function logViewQuery(q: URLSearchParams) {
  const size = whole(q, 'size')
  const text = (name: string) => {
    const value = q.get(name)
    return value === null || value === '' ? {} : { [name]: value }
  }
  return {
    ...text('entity_type'),
    ...text('entity_id'),
    ...text('start_date'),
    ...text('end_date'),
    ...text('start'),
    ...(size === undefined ? {} : { size }),
  }
}
