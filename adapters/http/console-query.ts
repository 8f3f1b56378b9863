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
